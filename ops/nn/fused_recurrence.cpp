// The fused layer op (fused_recurrence.hpp): its forward loop over time and its backward
// in cuDNN's two parts, the time loop here (BackwardData) and the input and weight
// gradients in fused_backward_weights.cpp (BackwardWeights). The cells' arithmetic is the
// plain kernels of cell_kernels_detail.hpp, reached through cell_kernel_choice_detail.hpp;
// what an LSTM and a GRU keep, and the LSTM's replay of the cell states, are in
// cell_replay_detail.hpp. Under create_graph backward differentiates the scan of cells
// (scan_recurrence.hpp).
#include <recur/ops/nn/fused_recurrence.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <recur/autodiff/record.hpp>
#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/nn/cell_replay_detail.hpp>
#include <recur/ops/nn/fused_recurrence_detail.hpp>
#include <recur/ops/nn/scan_recurrence.hpp>
#include <recur/ops/nn/sequence_lengths_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn {
namespace {

using detail::FusedGeometry;

// The gradients of the initial states that BackwardData yields (c0's LSTM only).
struct StateGradients {
  Tensor h0, c0;
};

// rows [count, ld]: the first `width` columns of each += bias (none if null).
template <class T>
void add_bias(T* rows, std::int64_t count, std::int64_t ld, const T* bias, std::int64_t width) {
  if (!bias) return;
  for (std::int64_t b = 0; b < count; ++b)
    for (std::int64_t j = 0; j < width; ++j) rows[b * ld + j] += bias[j];
}

struct FusedRecurrence {
  static constexpr std::string_view name = "fused_recurrence";
  FusedRecurrenceOptions options;
  std::vector<std::int64_t> lengths;  // checked options.lengths; empty: every element runs every step
  std::int8_t c0_at = -1, b_ih_at = -1, b_hh_at = -1;  // input positions after x, w_ih, w_hh, h0
  // LSTM: the final cell state as a second output (fused_recurrence_split), not as row T.
  bool cell_apart = false;
  std::shared_ptr<detail::FusedSaved> saved = std::make_shared<detail::FusedSaved>();

  // The cell and its form, which optional inputs follow x, w_ih, w_hh, h0 (in the order
  // c0, b_ih, b_hh), the lengths.
  OpAttributes attributes() const {
    return {{"kind", std::string(name_of(options.kind))},
            {"nonlinearity", std::string(name_of(options.nonlinearity))},
            {"linear_before_reset", options.linear_before_reset},
            {"reverse", options.reverse},
            {"truncate_gradient", options.truncate_gradient},
            {"lengths", lengths},
            {"has_c0", c0_at >= 0},
            {"has_b_ih", b_ih_at >= 0},
            {"has_b_hh", b_hh_at >= 0},
            {"cell_apart", cell_apart}};
  }

  bool lstm() const { return options.kind == CellKind::lstm; }
  bool packs_cell() const { return lstm() && !cell_apart; }  // the output's row T is c_T
  bool gru() const { return options.kind == CellKind::gru; }
  bool keeps_activations() const { return options.kind != CellKind::rnn; }
  // ONNX's GRU: the candidate's product reads r h, not h.
  bool reset_inside() const { return gru() && !options.linear_before_reset; }
  bool runs(std::int64_t t, std::int64_t b) const { return lengths.empty() || t < lengths[static_cast<std::size_t>(b)]; }
  // dst's row b = src's for every element b that does not run at time t (rows of n).
  template <class T>
  void carry_finished(std::int64_t t, const T* src, T* dst, std::int64_t batch, std::int64_t n) const {
    for (std::int64_t b = 0; b < batch; ++b)
      if (!runs(t, b)) std::copy(src + b * n, src + (b + 1) * n, dst + b * n);
  }
  Grads<Tensor> saved_tensors() const { return {saved->act, saved->cells, saved->hn}; }
  std::vector<Tensor> more_outputs() const { return {saved->final_cell}; }  // record_outputs, cell apart only
  void drop_saved() const { *saved = detail::FusedSaved{}; }  // a released checkpoint segment: replay remakes them

  Tensor forward(std::span<const Tensor> in) const {
    return dispatch_floating(name, in[0].dtype(), [&]<class T>() { return forward_as<T>(in); });
  }

  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      return dispatch_floating(name, a.grad.dtype(), [&]<class T>() { return backward_as<T>(a); });
    } else {
      return backward_recorded(a);
    }
  }

 private:
  FusedGeometry geometry(std::span<const Tensor> in) const {
    const std::int64_t steps = in[0].size(0), k = options.truncate_gradient;
    return {.steps = steps,
            .batch = in[0].size(1),
            .width = in[0].size(2),
            .n = in[3].size(1),
            .gh = in[2].size(0),
            .reverse = options.reverse,
            .lo = k >= 0 && k < steps ? steps - k : 0};
  }

  // b_ih + b_hh (either may be absent; a GRU's b_hh stays with its recurrent product) as
  // one row, or empty.
  template <class T>
  std::vector<T> bias_row(std::span<const Tensor> in, std::int64_t width) const {
    std::vector<T> bias;
    for (std::int8_t at : {b_ih_at, gru() ? std::int8_t{-1} : b_hh_at}) {
      if (at < 0) continue;
      bias.resize(static_cast<std::size_t>(width), T(0));
      const T* b = in[static_cast<std::size_t>(at)].data<T>();
      for (std::int64_t j = 0; j < width; ++j) bias[static_cast<std::size_t>(j)] += b[j];
    }
    return bias;
  }

  template <class T>
  Tensor forward_as(std::span<const Tensor> in) const {
    const Tensor &x = in[0], &w_ih = in[1], &w_hh = in[2], &h0 = in[3];
    const FusedGeometry geo = geometry(in);
    const std::int64_t steps = geo.steps, batch = geo.batch, width = geo.width, n = geo.n, gh = geo.gh;
    const std::int64_t rows = batch * gh, hrows = batch * n;
    // The input projection of every step at once, then the pre-activations and, in place,
    // the activations; for an RNN those are the output.
    Tensor pre = Tensor::empty({steps, batch, gh}, x.dtype());
    T* p = pre.data<T>();
    blas::gemm(false, true, steps * batch, gh, width, T(1), x.data<T>(), width, w_ih.data<T>(), width, T(0), p, gh);
    const std::vector<T> bias = bias_row<T>(in, gh);
    Tensor out = lstm() || gru() ? Tensor::empty({steps + (packs_cell() ? 1 : 0), batch, n}, x.dtype()) : pre;
    const std::int64_t interval = detail::replay_interval(steps);
    Tensor cells = lstm() ? Tensor::empty({(steps - 1) / interval, batch, n}, x.dtype()) : Tensor();
    std::vector<T> ring(lstm() ? static_cast<std::size_t>(2 * hrows) : 0);  // c_{t-1} and c_t
    std::vector<T> scratch(static_cast<std::size_t>(gru() ? rows + hrows : n));  // GRU: h W_hh^T [B, 3H] and r h [B, H]
    Tensor hn = gru() && !reset_inside() ? Tensor::empty({steps, batch, n}, x.dtype()) : Tensor();
    T* h = out.data<T>();
    const T* hp = h0.data<T>();
    const T* cp = lstm() ? in[static_cast<std::size_t>(c0_at)].data<T>() : nullptr;
    const detail::KernelTable<T>& kernels = detail::kernels<T>();
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = geo.time_of(s);
      T* g = p + t * rows;
      T* ht = h + t * hrows;
      if (gru()) {
        add_bias(g, batch, gh, bias.empty() ? nullptr : bias.data(), gh);  // x W_ih^T + b_ih
        gru_step(g, scratch.data(), hp, ht, hn.defined() ? hn.data<T>() + t * hrows : nullptr, in, batch, n);
        carry_finished(t, hp, ht, batch, n);
        hp = ht;
        continue;
      }
      blas::gemm(false, true, batch, gh, n, T(1), hp, n, w_hh.data<T>(), n, T(1), g, gh);  // += h W_hh^T
      add_bias(g, batch, gh, bias.empty() ? nullptr : bias.data(), gh);
      if (lstm()) {
        T* c = ring.data() + (s % 2) * hrows;
        for (std::int64_t b = 0; b < batch; ++b)
          kernels.lstm.forward(g + b * gh, g + b * gh, cp + b * n, c + b * n, ht + b * n, scratch.data(), n);
        carry_finished(t, cp, c, batch, n);
        if ((s + 1) % interval == 0 && s + 1 < steps)  // the entry state of the next segment
          std::copy(c, c + hrows, cells.data<T>() + ((s + 1) / interval - 1) * hrows);
        cp = c;
      } else {
        kernels.rnn.forward(g, hrows, options.nonlinearity);
      }
      carry_finished(t, hp, ht, batch, n);
      hp = ht;
    }
    if (lstm()) {
      Tensor final_cell = cell_apart ? Tensor::empty({batch, n}, x.dtype()) : Tensor();
      std::copy(cp, cp + hrows, cell_apart ? final_cell.data<T>() : h + steps * hrows);  // or row T
      *saved = {pre, cells, interval, Tensor(), final_cell};
    }
    if (gru()) *saved = {pre, Tensor(), 1, hn, Tensor()};
    return out;
  }

  template <class T>
  const T* bias_of(std::span<const Tensor> in, std::int8_t at, std::int64_t offset) const {
    return at >= 0 ? in[static_cast<std::size_t>(at)].data<T>() + offset : nullptr;
  }

  // One GRU step: g [B, 3H] (x W_ih^T + b_ih) becomes the activations and ht h'. scratch:
  // [B, 3H] for h W_hh^T + b_hh, then [B, H] for ONNX's r h. hn: where PyTorch's form keeps
  // h W_hn^T + b_hn for backward (null in ONNX's form).
  template <class T>
  void gru_step(T* g, T* scratch, const T* hprev, T* ht, T* hn, std::span<const Tensor> in, std::int64_t batch,
                std::int64_t n) const {
    const auto& gru_rows = detail::kernels<T>().gru;
    const std::int64_t gh = 3 * n;
    const T* w_hh = in[2].data<T>();
    T *hp = scratch, *rh = scratch + batch * gh;
    // The gates' product; in PyTorch's form the candidate's too.
    const std::int64_t cols = reset_inside() ? 2 * n : gh;
    blas::gemm(false, true, batch, cols, n, T(1), hprev, n, w_hh, n, T(0), hp, gh);
    add_bias(hp, batch, gh, bias_of<T>(in, b_hh_at, 0), cols);
    for (std::int64_t b = 0; b < batch; ++b) gru_rows.reset_update(g + b * gh, hp + b * gh, g + b * gh, n);
    if (reset_inside()) {
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t j = 0; j < n; ++j) rh[b * n + j] = g[b * gh + j] * hprev[b * n + j];
      blas::gemm(false, true, batch, n, n, T(1), rh, n, w_hh + 2 * n * n, n, T(0), hp + 2 * n, gh);
      add_bias(hp + 2 * n, batch, gh, bias_of<T>(in, b_hh_at, 2 * n), n);
    }
    for (std::int64_t b = 0; b < batch; ++b) {
      gru_rows.candidate(g + b * gh, hp + b * gh + 2 * n, g + b * gh, !reset_inside(), n);
      gru_rows.blend(g + b * gh, hprev + b * n, ht + b * n, n);
      if (hn) std::copy(hp + b * gh + 2 * n, hp + b * gh + 3 * n, hn + b * n);
    }
  }

  template <class T>
  Grads<Tensor> backward_as(const BackwardArgs<Tensor>& a) const {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(a.inputs[i]);
    if (keeps_activations() && !saved->act.defined()) forward_as<T>(in);  // a second backward: recompute
    const FusedGeometry geo = geometry(in);
    // The gradients of the pre-activations: in place of the activations for an LSTM or GRU.
    Tensor dgates = keeps_activations() ? saved->act : Tensor::empty({geo.steps, geo.batch, geo.gh}, in[0].dtype());
    // A GRU's recurrent side: gradients of its own in PyTorch's form; in ONNX's it shares
    // the input side's, and W_hn's gradient reads r h_prev.
    Tensor drec = gru() && !reset_inside() ? Tensor::empty({geo.steps, geo.batch, geo.gh}, in[0].dtype()) : dgates;
    Tensor reset_h = reset_inside() ? Tensor::empty({geo.steps, geo.batch, geo.n}, in[0].dtype()) : Tensor();
    const detail::GateGradients<T> d{dgates.data<T>(), drec.data<T>(), reset_h.defined() ? reset_h.data<T>() : nullptr};
    // The final cell state's gradient: row T of grad, or apart (undefined when none reached it).
    const Tensor& cell_grad = packs_cell() ? a.grad[geo.steps] : (a.more_grads.empty() ? Tensor() : a.more_grads[0]);
    const StateGradients states = backward_data<T>(geo, in, a.output, a.grad, cell_grad, d, a.needs_grad(3));
    if (keeps_activations()) *saved = detail::FusedSaved{};  // now gradients, no longer activations

    auto wants = [&](std::int8_t at) { return at >= 0 && a.needs_grad(static_cast<std::size_t>(at)); };
    const detail::WeightGradients w = detail::backward_weights<T>(
        geo, d, in[0], in[1], a.output.data<T>(), in[3].data<T>(),
        {.x = a.needs_grad(0), .w_ih = a.needs_grad(1), .w_hh = a.needs_grad(2), .b_ih = wants(b_ih_at),
         .b_hh = wants(b_hh_at)});
    Grads<Tensor> g(a.inputs.size());
    g[0] = w.x;
    g[1] = w.w_ih;
    g[2] = w.w_hh;
    if (a.needs_grad(3)) g[3] = states.h0;
    if (wants(c0_at)) g[static_cast<std::size_t>(c0_at)] = states.c0;
    if (wants(b_ih_at)) g[static_cast<std::size_t>(b_ih_at)] = w.b_ih;
    if (wants(b_hh_at)) g[static_cast<std::size_t>(b_hh_at)] = w.b_hh;
    return g;
  }

  // BackwardData: the time loop from the last step down to the window's first. It turns
  // d.input [T, B, G*H] (the saved activations of an LSTM or GRU; for an RNN any buffer)
  // into the gradients of the pre-activations in place, fills a GRU's d.recurrent and
  // d.reset_h, and yields the gradients reaching h0 and c0 (zero when truncation keeps
  // them out of reach; h0's computed only if want_h0). grad: the outputs' rows (from 0);
  // cell_grad: an LSTM's final cell state's [B, H], undefined for zero.
  template <class T>
  StateGradients backward_data(const FusedGeometry& geo, std::span<const Tensor> in, const Tensor& output,
                               const Tensor& grad, const Tensor& cell_grad, const detail::GateGradients<T>& d,
                               bool want_h0) const {
    const std::int64_t steps = geo.steps, batch = geo.batch, n = geo.n, gh = geo.gh, lo = geo.lo;
    const std::int64_t rows = batch * gh, hrows = batch * n;
    T *dg = d.input, *drec = d.recurrent;
    const T* w_hh = in[2].data<T>();
    const T* h = output.data<T>();
    const T* up = grad.data<T>();
    // dh: the whole gradient reaching h at the current step, its upstream row plus what the
    // step after it sends back (added by the gemm, beta = 1, so no separate pass). A GRU's
    // h also reaches h' directly (h' = ... + z h): that share waits in `direct`.
    std::vector<T> dh(static_cast<std::size_t>(hrows)), scratch(static_cast<std::size_t>(n));
    // With lengths, a finished element's h passes straight through too: its dh waits there.
    std::vector<T> direct(static_cast<std::size_t>(gru() || !lengths.empty() ? hrows : 0));
    std::vector<T> d_rh(static_cast<std::size_t>(reset_inside() ? hrows : 0));  // ONNX's GRU: r h's gradient
    auto upstream = [&](std::int64_t s) {
      const T* row = up + geo.time_of(s) * hrows;
      std::copy(row, row + hrows, dh.begin());
      for (std::size_t j = 0; j < direct.size(); ++j) dh[j] += direct[j];
    };
    // dc: the gradient reaching the cell state of the current step, from the final state's
    // upstream row on.
    StateGradients st{zeros({batch, n}, in[0].dtype()), lstm() ? zeros({batch, n}, in[0].dtype()) : Tensor()};
    T* dc = lstm() ? st.c0.data<T>() : nullptr;
    if (geo.count() > 0) {
      const T* row = up + geo.time_of(steps - 1) * hrows;
      std::copy(row, row + hrows, dh.begin());
      if (cell_grad.defined()) std::copy(cell_grad.data<T>(), cell_grad.data<T>() + hrows, dc);
    }
    const detail::KernelTable<T>& kernels = detail::kernels<T>();
    std::optional<detail::CellReplay<T>> cells;
    if (lstm())
      cells.emplace(*saved, dg, in[static_cast<std::size_t>(c0_at)].data<T>(), steps, batch, n, geo.reverse, lengths);
    // ONNX's GRU sends h_prev's gradient back through its first 2H gate rows only (the
    // candidate's reaches it through r h, in gru_backward_step).
    const std::int64_t k = reset_inside() ? 2 * n : gh;
    for (std::int64_t s = steps - 1; s >= lo; --s) {
      const std::int64_t t = geo.time_of(s);
      T* dgt = dg + t * rows;
      if (lstm()) {
        const auto [c, c_prev] = cells->at(s);  // replays before the step overwrites its activations
        for (std::int64_t b = 0; b < batch; ++b)
          if (runs(t, b))  // a finished element's dc passes through unchanged
            kernels.lstm.backward(dgt + b * gh, c_prev + b * n, c + b * n, dh.data() + b * n, dc + b * n,
                                  scratch.data(), n);
      } else if (gru()) {
        const T* hprev = s == 0 ? in[3].data<T>() : h + geo.time_of(s - 1) * hrows;
        gru_backward_step(dgt, drec + t * rows, d.reset_h ? d.reset_h + t * hrows : nullptr,
                          hprev, dh.data(), direct.data(), d_rh.data(), t, batch, n, w_hh);
      } else {
        kernels.rnn.backward(h + t * hrows, dh.data(), dgt, hrows, options.nonlinearity);
      }
      if (!lengths.empty()) pass_finished(t, dgt, drec + t * rows, d.reset_h ? d.reset_h + t * hrows : nullptr,
                                          dh.data(), direct.data(), batch, n, gh);
      // dh_{t-1} += dgates_t W_hh; for the first step that is h0's gradient.
      const T* drt = drec + t * rows;
      if (s > lo) {
        upstream(s - 1);
        blas::gemm(false, false, batch, n, k, T(1), drt, gh, w_hh, n, T(1), dh.data(), n);
      } else if (lo == 0 && want_h0) {
        std::copy(direct.begin(), direct.end(), st.h0.data<T>());
        blas::gemm(false, false, batch, n, k, T(1), drt, gh, w_hh, n, direct.empty() ? T(0) : T(1), st.h0.data<T>(), n);
      }
    }
    if (lstm() && lo > 0) st.c0 = zeros({batch, n}, in[0].dtype());  // c0 out of reach
    return st;
  }

  // With lengths, after the backward of the step at time t: an element that does not run
  // there has h' = h (and c' = c), so its gate gradients are zero and its whole dh goes on
  // to h through `direct`; the others' direct share is the GRU's own (zero otherwise).
  template <class T>
  void pass_finished(std::int64_t t, T* dgt, T* drt, T* rh, const T* dh, T* direct, std::int64_t batch,
                     std::int64_t n, std::int64_t gh) const {
    for (std::int64_t b = 0; b < batch; ++b) {
      T* row = direct + b * n;
      if (runs(t, b)) {
        if (!gru()) std::fill(row, row + n, T(0));
        continue;
      }
      std::copy(dh + b * n, dh + (b + 1) * n, row);
      std::fill(dgt + b * gh, dgt + (b + 1) * gh, T(0));
      std::fill(drt + b * gh, drt + (b + 1) * gh, T(0));
      if (rh) std::fill(rh + b * n, rh + (b + 1) * n, T(0));
    }
  }

  // Backward of one GRU step at time t from dh [B, H], the whole gradient reaching h':
  // dgt [B, 3H] turns from the activations into the input side's gate gradients, drt
  // [B, 3H] gets the recurrent side's (PyTorch's form; in ONNX's it is dgt), direct [B, H]
  // the share of h_prev's gradient that does not pass through W_hh's gate rows, and
  // ONNX's form keeps r h_prev in rh [B, H] for W_hn's gradient (d_rh [B, H]: scratch).
  template <class T>
  void gru_backward_step(T* dgt, T* drt, T* rh, const T* hprev, const T* dh, T* direct, T* d_rh, std::int64_t t,
                         std::int64_t batch, std::int64_t n, const T* w_hh) const {
    const auto& gru_rows = detail::kernels<T>().gru;
    const std::int64_t gh = 3 * n;
    if (reset_inside())
      for (std::int64_t b = 0; b < batch; ++b)
        for (std::int64_t j = 0; j < n; ++j) rh[b * n + j] = dgt[b * gh + j] * hprev[b * n + j];
    for (std::int64_t b = 0; b < batch; ++b)
      gru_rows.backward_blend(dgt + b * gh, hprev + b * n, dh + b * n, direct + b * n, n);
    if (reset_inside()) {
      // r h's gradient dn W_hn, into the reset gate's and h_prev's.
      blas::gemm(false, false, batch, n, n, T(1), dgt + 2 * n, gh, w_hh + 2 * n * n, n, T(0), d_rh, n);
      for (std::int64_t b = 0; b < batch; ++b)
        gru_rows.backward_reset_inner(dgt + b * gh, d_rh + b * n, hprev + b * n, direct + b * n, n);
      return;
    }
    const T* hn = saved->hn.data<T>() + t * batch * n;
    for (std::int64_t b = 0; b < batch; ++b) {
      gru_rows.backward_reset_scaled(dgt + b * gh, hn + b * n, drt + b * gh + 2 * n, n);
      std::copy(dgt + b * gh, dgt + b * gh + 2 * n, drt + b * gh);
    }
  }

  // create_graph: the same function recorded op by op through scan, differentiated again.
  Grads<Var> backward_recorded(const BackwardArgs<Var>& a) const {
    return transactional(a.inputs[0], [&] { return backward_recorded_nodes(a); });
  }
  // The vector-Jacobian product J^T grad, recorded: the scan is run on fresh aliases of the
  // inputs (reshape nodes, no copies) and differentiated from sum(out * grad) back to those
  // aliases only. The nested pass then walks nothing older than them, so it neither adds
  // the terms of grad's own dependence on the inputs (grad = 2 out for a loss sum(out^2):
  // the outer pass owns those) nor re-enters other fused nodes through grad's history.
  Grads<Var> backward_recorded_nodes(const BackwardArgs<Var>& a) const {
    std::vector<Var> in;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(reshape(a.inputs[i], a.inputs[i].shape()));
    auto input = [&](std::int8_t at) { return at >= 0 ? in[static_cast<std::size_t>(at)] : Var(); };
    const CellWeights w{in[1], in[2], input(b_ih_at), input(b_hh_at)};
    const Var out = detail::scan_recurrence(options, in[0], w, in[3], input(c0_at));
    std::vector<Var> wanted;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (a.needs_grad(i)) wanted.push_back(in[i]);
    Var total;
    if (!cell_apart) {
      total = sum(out * a.grad);
    } else {  // the scan's result is packed: rows 0..T-1, then the final cell state's row T
      const std::int64_t steps = a.inputs[0].size(0);
      total = sum(slice(out, 0, 0, steps) * a.grad);
      if (!a.more_grads.empty() && a.more_grads[0].defined())
        total = total + sum(index(out, 0, steps) * a.more_grads[0]);
    }
    const std::vector<Var> gs = grad(std::span<const Var>(&total, 1), wanted, {}, {.create_graph = true});
    Grads<Var> g(a.inputs.size());
    for (std::size_t i = 0, next = 0; i < a.inputs.size(); ++i)
      if (a.needs_grad(i)) g[i] = gs[next++];
    return g;
  }
};

void check_arguments(const FusedRecurrenceOptions& o, const Var& x, const CellWeights& w, const Var& h0,
                     const Var& c0) {
  constexpr std::string_view op = FusedRecurrence::name;
  if (o.truncate_gradient < -1)
    fail<ValueError>(op, "option 'truncate_gradient' must be -1 (no truncation) or >= 0, got ", o.truncate_gradient);
  const bool lstm = o.kind == CellKind::lstm;
  detail::check_cell_arguments(op, lstm ? 4 : (o.kind == CellKind::gru ? 3 : 1), x, h0, lstm ? &c0 : nullptr, w,
                               {.sequence = true, .h = "h0", .c = "c0"});
  if (!is_floating(x.dtype())) fail<DTypeError>(op, "expects float32 or float64, got ", x.dtype());
  if (o.lengths.given && o.truncate_gradient >= 0)
    fail<ValueError>(op, "option 'lengths' with truncate_gradient = ", o.truncate_gradient,
                     " is not supported: truncate whole chunks instead (nn::tbptt)");
}

// The checked op and its inputs, for either result layout.
std::pair<FusedRecurrence, std::vector<Var>> make_op(const FusedRecurrenceOptions& options, const Var& x,
                                                     const CellWeights& w, const Var& h0, const Var& c0) {
  check_arguments(options, x, w, h0, c0);
  FusedRecurrence op{options, detail::checked_lengths(FusedRecurrence::name, options.lengths, x.shape(), 0, 1)};
  std::vector<Var> inputs{x, w.w_ih, w.w_hh, h0};
  auto add = [&](const Var& v, std::int8_t& at) {
    if (!v.defined()) return;
    at = static_cast<std::int8_t>(inputs.size());
    inputs.push_back(v);
  };
  if (options.kind == CellKind::lstm) add(c0, op.c0_at);
  add(w.b_ih, op.b_ih_at);
  add(w.b_hh, op.b_hh_at);
  return {std::move(op), std::move(inputs)};
}

}  // namespace

Var fused_recurrence(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w, const Var& h0,
                     const Var& c0) {
  auto [op, inputs] = make_op(options, x, w, h0, c0);
  return record_list(std::move(op), inputs);
}

FusedOutputs fused_recurrence_split(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w,
                                    const Var& h0, const Var& c0) {
  auto [op, inputs] = make_op(options, x, w, h0, c0);
  if (!op.lstm()) return {record_list(std::move(op), inputs), Var()};
  op.cell_apart = true;
  const std::vector<Var> outputs = record_outputs(std::move(op), inputs);
  return {outputs[0], outputs[1]};
}

}  // namespace recur::nn
