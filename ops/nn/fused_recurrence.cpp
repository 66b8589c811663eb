// The fused layer op (fused_recurrence.hpp): its forward loop over time and its backward
// in cuDNN's two parts, the time loop here (BackwardData) and the input and weight
// gradients in fused_backward_weights.cpp (BackwardWeights). The cells' arithmetic is the
// plain kernels of cell_kernels_detail.hpp, reached through cell_kernel_choice_detail.hpp;
// what an LSTM and a GRU keep, and the LSTM's replay of the cell states, are in
// cell_replay_detail.hpp. Under create_graph backward differentiates the scan of cells
// (scan_recurrence.hpp).
#include <recur/ops/nn/fused_recurrence.hpp>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include <recur/autodiff/record.hpp>
#include <recur/core/blas.hpp>
#include <recur/core/repeated_gemm.hpp>
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

// What BackwardData yields: the initial states' gradients (c0's an LSTM's only) and a
// projected LSTM's dW_hr (its per-step terms need the step's dh, which only the loop has).
struct StateGradients {
  Tensor h0, c0, w_hr;
};

// rows [count, ld]: the first `width` columns of each += bias (none if null).
template <class T>
void add_bias(T* rows, std::int64_t count, std::int64_t ld, const T* bias, std::int64_t width) {
  if (!bias) return;
  for (std::int64_t b = 0; b < count; ++b)
    for (std::int64_t j = 0; j < width; ++j) rows[b * ld + j] += bias[j];
}

// The op's inputs by role. x, w_ih, w_hh and h0 come first, in that order; c0 (an LSTM's),
// b_ih, b_hh and w_hr (a projected LSTM's) follow, in that order, when given.
enum class In : std::uint8_t { x, w_ih, w_hh, h0, c0, b_ih, b_hh, w_hr };
struct InputSlots {
  std::array<std::int8_t, 8> at{0, 1, 2, 3, -1, -1, -1, -1};  // position of each role, -1: absent
  bool has(In r) const { return at[static_cast<std::size_t>(r)] >= 0; }
  std::size_t operator[](In r) const { return static_cast<std::size_t>(at[static_cast<std::size_t>(r)]); }
};

struct FusedRecurrence {
  static constexpr std::string_view name = "fused_recurrence";
  FusedRecurrenceOptions options;
  std::vector<std::int64_t> lengths;  // checked options.lengths; empty: every element runs every step
  InputSlots slots{};
  // LSTM: the final cell state as a second output (fused_recurrence_split), not as row T.
  bool cell_apart = false;
  std::shared_ptr<detail::FusedSaved> saved = std::make_shared<detail::FusedSaved>();
  // A copy with the same parameters and saved tensors of its own (a captured loop step
  // records the op again from a copy; a plain copy would share `saved`).
  FusedRecurrence fresh_copy() const {
    FusedRecurrence op = *this;
    op.saved = std::make_shared<detail::FusedSaved>();
    return op;
  }

  // The cell and its form, which optional inputs follow x, w_ih, w_hh, h0 (in the order
  // c0, b_ih, b_hh, w_hr), the lengths.
  OpAttributes attributes() const {
    return {{"kind", std::string(name_of(options.kind))},
            {"nonlinearity", std::string(name_of(options.nonlinearity))},
            {"linear_before_reset", options.linear_before_reset},
            {"reverse", options.reverse},
            {"truncate_gradient", options.truncate_gradient},
            {"lengths", lengths},
            {"has_c0", slots.has(In::c0)},
            {"has_b_ih", slots.has(In::b_ih)},
            {"has_b_hh", slots.has(In::b_hh)},
            {"has_w_hr", slots.has(In::w_hr)},
            {"cell_apart", cell_apart}};
  }

  // Input `r` of `in` (any indexable list of the inputs), which must be given.
  template <class List>
  decltype(auto) arg(const List& in, In r) const {
    return in[slots[r]];
  }
  // The elements of input `r`, null when it is not given.
  template <class T>
  const T* data(std::span<const Tensor> in, In r) const {
    return slots.has(r) ? in[slots[r]].data<T>() : nullptr;
  }

  bool lstm() const { return options.kind == CellKind::lstm; }
  bool projected() const { return slots.has(In::w_hr); }  // h' = (o * tanh(c')) W_hr^T
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
    return dispatch_floating(name, arg(in, In::x).dtype(), [&]<class T>() { return forward_as<T>(in); });
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
    const Tensor& x = arg(in, In::x);
    const std::int64_t steps = x.size(0), k = options.truncate_gradient, p = arg(in, In::h0).size(1);
    return {.steps = steps,
            .batch = x.size(1),
            .width = x.size(2),
            .n = projected() ? arg(in, In::w_hr).size(1) : p,
            .gh = arg(in, In::w_hh).size(0),
            .p = p,
            .reverse = options.reverse,
            .lo = k >= 0 && k < steps ? steps - k : 0};
  }

  // b_ih + b_hh (either may be absent; a GRU's b_hh stays with its recurrent product) as
  // one row, or empty.
  template <class T>
  std::vector<T> bias_row(std::span<const Tensor> in, std::int64_t width) const {
    std::vector<T> bias;
    for (const T* b : {data<T>(in, In::b_ih), gru() ? nullptr : data<T>(in, In::b_hh)}) {
      if (!b) continue;
      bias.resize(static_cast<std::size_t>(width), T(0));
      for (std::int64_t j = 0; j < width; ++j) bias[static_cast<std::size_t>(j)] += b[j];
    }
    return bias;
  }

  template <class T>
  Tensor forward_as(std::span<const Tensor> in) const {
    const Tensor &x = arg(in, In::x), &w_ih = arg(in, In::w_ih), &w_hh = arg(in, In::w_hh), &h0 = arg(in, In::h0);
    const FusedGeometry geo = geometry(in);
    const std::int64_t steps = geo.steps, batch = geo.batch, width = geo.width, n = geo.n, gh = geo.gh, p = geo.p;
    const std::int64_t rows = batch * gh, hrows = batch * p, crows = batch * n;  // h rows of P, c rows of H
    // The input projection of every step at once, then the pre-activations and, in place,
    // the activations; for an RNN those are the output.
    Tensor pre = Tensor::empty({steps, batch, gh}, x.dtype());
    T* pre_data = pre.data<T>();
    // (On libxsmm in blocks of rows where k is short: core/blas_narrow_detail.hpp.)
    blas::gemm(false, true, steps * batch, gh, width, T(1), x.data<T>(), width, w_ih.data<T>(), width, T(0), pre_data,
               gh);
    const std::vector<T> bias = bias_row<T>(in, gh);
    Tensor out = lstm() || gru() ? Tensor::empty({steps + (packs_cell() ? 1 : 0), batch, p}, x.dtype()) : pre;
    const std::int64_t interval = detail::replay_interval(steps);
    Tensor cells = lstm() ? Tensor::empty({(steps - 1) / interval, batch, n}, x.dtype()) : Tensor();
    std::vector<T> ring(lstm() ? static_cast<std::size_t>(2 * crows) : 0);  // c_{t-1} and c_t
    // The cells' elementwise work of a step runs its batch rows in `tiles` fixed ranges
    // (blas::for_each_step_range). Rows are independent and each is computed alike wherever
    // it runs: the bits never depend on the split.
    const std::int64_t tiles = blas::step_work_tiles(rows, batch);
    // GRU: h W_hh^T [B, 3H] and r h [B, H]; LSTM: a row's scratch per tile.
    std::vector<T> scratch(static_cast<std::size_t>(gru() ? rows + hrows : lstm() ? n * tiles : 0));
    std::vector<T> m(static_cast<std::size_t>(projected() ? crows : 0));  // o * tanh(c), before W_hr
    Tensor hn = gru() && !reset_inside() ? Tensor::empty({steps, batch, n}, x.dtype()) : Tensor();
    T* h = out.data<T>();
    const T* hp = h0.data<T>();
    const T* cp = data<T>(in, In::c0);
    const T* row_bias = bias.empty() ? nullptr : bias.data();  // b_ih (+ b_hh but for a GRU)
    const detail::KernelTable<T>& kernels = detail::kernels<T>();
    // The recurrent product of every step, W_hh the same at each (core/repeated_gemm.hpp):
    // g += h W_hh^T, or for a GRU its gates' h W_hh^T into scratch.
    const std::int64_t cols = gru() && reset_inside() ? 2 * n : gh;
    const blas::RepeatedGemm<T> recurrent(batch, cols, p, w_hh.data<T>(), p, true, p, gh, gru() ? T(0) : T(1), steps);
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = geo.time_of(s);
      T* g = pre_data + t * rows;
      T* ht = h + t * hrows;
      if (gru()) {
        gru_step(g, row_bias, scratch.data(), hp, ht, hn.defined() ? hn.data<T>() + t * hrows : nullptr, in, batch, n,
                 recurrent, tiles);
        carry_finished(t, hp, ht, batch, n);
        hp = ht;
        continue;
      }
      recurrent(hp, g);  // += h W_hh^T
      if (lstm()) {
        T* c = ring.data() + (s % 2) * crows;
        T* mt = projected() ? m.data() : ht;  // o * tanh(c'), h' itself without a projection
        blas::for_each_step_range(batch, tiles, [&](std::int64_t tile, std::int64_t begin, std::int64_t end) {
          add_bias(g + begin * gh, end - begin, gh, row_bias, gh);
          for (std::int64_t b = begin; b < end; ++b)
            kernels.lstm.forward(g + b * gh, g + b * gh, cp + b * n, c + b * n, mt + b * n, scratch.data() + tile * n,
                                 n);
        });
        if (projected())  // h' = m W_hr^T
          blas::gemm(false, true, batch, p, n, T(1), mt, n, data<T>(in, In::w_hr), n, T(0), ht, p);
        carry_finished(t, cp, c, batch, n);
        if ((s + 1) % interval == 0 && s + 1 < steps)  // the entry state of the next segment
          std::copy(c, c + crows, cells.data<T>() + ((s + 1) / interval - 1) * crows);
        cp = c;
      } else {  // an RNN's g is h' (gh = p)
        blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
          add_bias(g + begin * gh, end - begin, gh, row_bias, gh);
          kernels.rnn.forward(g + begin * gh, (end - begin) * gh, options.nonlinearity);
        });
      }
      carry_finished(t, hp, ht, batch, p);
      hp = ht;
    }
    if (lstm()) {
      Tensor final_cell = cell_apart ? Tensor::empty({batch, n}, x.dtype()) : Tensor();
      std::copy(cp, cp + crows, cell_apart ? final_cell.data<T>() : h + steps * crows);  // or row T (p = n)
      *saved = {pre, cells, interval, Tensor(), final_cell};
    }
    if (gru()) *saved = {pre, Tensor(), 1, hn, Tensor()};
    return out;
  }

  // b_hh from column `offset` on, null when there is none.
  template <class T>
  const T* b_hh_from(std::span<const Tensor> in, std::int64_t offset) const {
    const T* b = data<T>(in, In::b_hh);
    return b ? b + offset : nullptr;
  }

  // One GRU step: g [B, 3H] (x W_ih^T, + b_ih when given) becomes the activations and ht h'.
  // scratch: [B, 3H] for h W_hh^T + b_hh, then [B, H] for ONNX's r h. hn: where PyTorch's
  // form keeps h W_hn^T + b_hn for backward (null in ONNX's form). The rows' elementwise work
  // in `tiles` (blas::for_each_step_range).
  template <class T>
  void gru_step(T* g, const T* b_ih, T* scratch, const T* hprev, T* ht, T* hn, std::span<const Tensor> in,
                std::int64_t batch, std::int64_t n, const blas::RepeatedGemm<T>& gates, std::int64_t tiles) const {
    const auto& gru_rows = detail::kernels<T>().gru;
    const std::int64_t gh = 3 * n;
    const T* w_hh = data<T>(in, In::w_hh);
    const T *b_hh = b_hh_from<T>(in, 0), *b_hn = b_hh_from<T>(in, 2 * n);  // read before the tiles
    T *hp = scratch, *rh = scratch + batch * gh;
    // The gates' product (h W_hh^T over the first 2H rows of W_hh, or in PyTorch's form all
    // 3H, the candidate's too).
    const std::int64_t cols = reset_inside() ? 2 * n : gh;
    gates(hprev, hp);
    auto gates_of_rows = [&](std::int64_t begin, std::int64_t end) {
      add_bias(g + begin * gh, end - begin, gh, b_ih, gh);
      add_bias(hp + begin * gh, end - begin, gh, b_hh, cols);
      for (std::int64_t b = begin; b < end; ++b) gru_rows.reset_update(g + b * gh, hp + b * gh, g + b * gh, n);
    };
    auto output_of_rows = [&](std::int64_t begin, std::int64_t end) {
      for (std::int64_t b = begin; b < end; ++b) {
        gru_rows.candidate(g + b * gh, hp + b * gh + 2 * n, g + b * gh, !reset_inside(), n);
        gru_rows.blend(g + b * gh, hprev + b * n, ht + b * n, n);
        if (hn) std::copy(hp + b * gh + 2 * n, hp + b * gh + 3 * n, hn + b * n);
      }
    };
    if (!reset_inside()) {
      blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
        gates_of_rows(begin, end);
        output_of_rows(begin, end);
      });
      return;
    }
    // ONNX's form: the candidate's product reads r h, made between the two.
    blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      gates_of_rows(begin, end);
      for (std::int64_t b = begin; b < end; ++b)
        for (std::int64_t j = 0; j < n; ++j) rh[b * n + j] = g[b * gh + j] * hprev[b * n + j];
    });
    blas::gemm(false, true, batch, n, n, T(1), rh, n, w_hh + 2 * n * n, n, T(0), hp + 2 * n, gh);
    blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      add_bias(hp + begin * gh + 2 * n, end - begin, gh, b_hn, n);
      output_of_rows(begin, end);
    });
  }

  template <class T>
  Grads<Tensor> backward_as(const BackwardArgs<Tensor>& a) const {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(a.inputs[i]);
    if (keeps_activations() && !saved->act.defined()) forward_as<T>(in);  // a second backward: recompute
    const FusedGeometry geo = geometry(in);
    const DType dtype = arg(in, In::x).dtype();
    // The gradients of the pre-activations: in place of the activations for an LSTM or GRU.
    Tensor dgates = keeps_activations() ? saved->act : Tensor::empty({geo.steps, geo.batch, geo.gh}, dtype);
    // A GRU's recurrent side: gradients of its own in PyTorch's form; in ONNX's it shares
    // the input side's, and W_hn's gradient reads r h_prev.
    Tensor drec = gru() && !reset_inside() ? Tensor::empty({geo.steps, geo.batch, geo.gh}, dtype) : dgates;
    Tensor reset_h = reset_inside() ? Tensor::empty({geo.steps, geo.batch, geo.n}, dtype) : Tensor();
    const detail::GateGradients<T> d{dgates.data<T>(), drec.data<T>(), reset_h.defined() ? reset_h.data<T>() : nullptr};
    // The final cell state's gradient: row T of grad, or apart (undefined when none reached it).
    const Tensor& cell_grad = packs_cell() ? a.grad[geo.steps] : (a.more_grads.empty() ? Tensor() : a.more_grads[0]);
    auto wants = [&](In r) { return slots.has(r) && a.needs_grad(slots[r]); };
    const StateGradients states =
        backward_data<T>(geo, in, a.output, a.grad, cell_grad, d, wants(In::h0), wants(In::w_hr));
    if (keeps_activations()) *saved = detail::FusedSaved{};  // now gradients, no longer activations

    const detail::WeightGradients w = detail::backward_weights<T>(
        geo, d, arg(in, In::x), arg(in, In::w_ih), a.output.data<T>(), data<T>(in, In::h0),
        {.x = wants(In::x), .w_ih = wants(In::w_ih), .w_hh = wants(In::w_hh), .b_ih = wants(In::b_ih),
         .b_hh = wants(In::b_hh)});
    Grads<Tensor> g(a.inputs.size());
    auto give = [&](In r, const Tensor& t) {
      if (wants(r)) g[slots[r]] = t;
    };
    give(In::x, w.x);
    give(In::w_ih, w.w_ih);
    give(In::w_hh, w.w_hh);
    give(In::h0, states.h0);
    give(In::c0, states.c0);
    give(In::b_ih, w.b_ih);
    give(In::b_hh, w.b_hh);
    give(In::w_hr, states.w_hr);
    return g;
  }

  // BackwardData: the time loop from the last step down to the window's first. It turns
  // d.input [T, B, G*H] (the saved activations of an LSTM or GRU; for an RNN any buffer)
  // into the gradients of the pre-activations in place, fills a GRU's d.recurrent and
  // d.reset_h, and yields the gradients reaching h0 and c0 (zero when truncation keeps
  // them out of reach; h0's computed only if want_h0) and, if want_w_hr, dW_hr. grad: the
  // outputs' rows (from 0); cell_grad: an LSTM's final cell state's [B, H], undefined for
  // zero.
  //
  // Per step, with dh the whole gradient reaching h' (its output row plus what the next
  // step sends back) and, for a projected LSTM, h' = m W_hr^T with m = o * tanh(c'):
  //   dW_hr += dh^T m,   dm = dh W_hr          (the cell's kernel then reads dm for dh)
  //   dgates = the kernel's backward of (dm or dh, dc)
  //   dh_prev += dgates W_hh,                   dc_prev: the kernel's, in place.
  template <class T>
  StateGradients backward_data(const FusedGeometry& geo, std::span<const Tensor> in, const Tensor& output,
                               const Tensor& grad, const Tensor& cell_grad, const detail::GateGradients<T>& d,
                               bool want_h0, bool want_w_hr) const {
    const std::int64_t steps = geo.steps, batch = geo.batch, n = geo.n, p = geo.p, gh = geo.gh, lo = geo.lo;
    const std::int64_t rows = batch * gh, hrows = batch * p, crows = batch * n;  // h rows of P, c rows of H
    const DType dtype = arg(in, In::x).dtype();
    T *dg = d.input, *drec = d.recurrent;
    const T* w_hh = data<T>(in, In::w_hh);
    const T* w_hr = data<T>(in, In::w_hr);
    const T* h = output.data<T>();
    const T* up = grad.data<T>();
    // The cells' elementwise work of a step in row tiles, as forward's; an LSTM row's scratch
    // per tile.
    const std::int64_t tiles = blas::step_work_tiles(rows, batch);
    std::vector<T> scratch(static_cast<std::size_t>(lstm() ? n * tiles : 0));
    // dh: the whole gradient reaching h at the current step, its upstream row plus what the
    // step after it sends back (added by the gemm, beta = 1, so no separate pass). A GRU's
    // h also reaches h' directly (h' = ... + z h): that share waits in `direct`.
    std::vector<T> dh(static_cast<std::size_t>(hrows));
    // With lengths, a finished element's h passes straight through too: its dh waits there.
    std::vector<T> direct(static_cast<std::size_t>(gru() || !lengths.empty() ? hrows : 0));
    std::vector<T> d_rh(static_cast<std::size_t>(reset_inside() ? hrows : 0));  // ONNX's GRU: r h's gradient
    std::vector<T> m(static_cast<std::size_t>(w_hr ? crows : 0)), dm(m.size());  // a projected LSTM's m, dm
    auto upstream = [&](std::int64_t s) {
      const T* row = up + geo.time_of(s) * hrows;
      std::copy(row, row + hrows, dh.begin());
      for (std::size_t j = 0; j < direct.size(); ++j) dh[j] += direct[j];
    };
    // dc: the gradient reaching the cell state of the current step, from the final state's
    // upstream row on.
    StateGradients st{zeros({batch, p}, dtype), lstm() ? zeros({batch, n}, dtype) : Tensor(),
                      want_w_hr ? zeros({p, n}, dtype) : Tensor()};
    T* dc = lstm() ? st.c0.data<T>() : nullptr;
    if (geo.count() > 0) {
      const T* row = up + geo.time_of(steps - 1) * hrows;
      std::copy(row, row + hrows, dh.begin());
      if (cell_grad.defined()) std::copy(cell_grad.data<T>(), cell_grad.data<T>() + crows, dc);
    }
    const detail::KernelTable<T>& kernels = detail::kernels<T>();
    std::optional<detail::CellReplay<T>> cells;
    if (lstm()) cells.emplace(*saved, dg, data<T>(in, In::c0), steps, batch, n, geo.reverse, lengths, tiles);
    // ONNX's GRU sends h_prev's gradient back through its first 2H gate rows only (the
    // candidate's reaches it through r h, in gru_backward_step).
    const std::int64_t k = reset_inside() ? 2 * n : gh;
    // dh_{t-1} += dgates_t W_hh at every step, W_hh the same at each (core/repeated_gemm.hpp).
    // (Run at every step but the window's first, and there too for h0's gradient.)
    const std::int64_t products = std::max<std::int64_t>(0, steps - lo - 1) + (lo == 0 && want_h0 ? 1 : 0);
    const blas::RepeatedGemm<T> recurrent(batch, p, k, w_hh, p, false, gh, p, T(1), products);
    for (std::int64_t s = steps - 1; s >= lo; --s) {
      const std::int64_t t = geo.time_of(s);
      T* dgt = dg + t * rows;
      if (lstm()) {
        // Replays before the step overwrites its activations. (Not a structured binding: clang
        // before 16 cannot capture one in the lambda below.)
        const std::pair<const T*, const T*> states = cells->at(s);
        const T *c = states.first, *c_prev = states.second;
        if (w_hr) project_backward(dgt, c, dh.data(), m.data(), dm.data(), w_hr, st.w_hr, t, batch, n, p, gh);
        const T* dout = w_hr ? dm.data() : dh.data();
        blas::for_each_step_range(batch, tiles, [&](std::int64_t tile, std::int64_t begin, std::int64_t end) {
          for (std::int64_t b = begin; b < end; ++b)
            if (runs(t, b))  // a finished element's dc passes through unchanged
              kernels.lstm.backward(dgt + b * gh, c_prev + b * n, c + b * n, dout + b * n, dc + b * n,
                                    scratch.data() + tile * n, n);
        });
      } else if (gru()) {
        const T* hprev = s == 0 ? data<T>(in, In::h0) : h + geo.time_of(s - 1) * hrows;
        gru_backward_step(dgt, drec + t * rows, d.reset_h ? d.reset_h + t * hrows : nullptr,
                          hprev, dh.data(), direct.data(), d_rh.data(), t, batch, n, w_hh, tiles);
      } else {  // rows of p = gh
        const T* ht = h + t * hrows;
        blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
          kernels.rnn.backward(ht + begin * p, dh.data() + begin * p, dgt + begin * p, (end - begin) * p,
                               options.nonlinearity);
        });
      }
      if (!lengths.empty()) pass_finished(t, dgt, drec + t * rows, d.reset_h ? d.reset_h + t * hrows : nullptr,
                                          dh.data(), direct.data(), batch, p, gh);
      // dh_{t-1} += dgates_t W_hh; for the first step that is h0's gradient.
      const T* drt = drec + t * rows;
      if (s > lo) {
        upstream(s - 1);
        recurrent(drt, dh.data());
      } else if (lo == 0 && want_h0) {  // st.h0 starts at zero: adding to it is h0's whole gradient
        std::copy(direct.begin(), direct.end(), st.h0.data<T>());
        recurrent(drt, st.h0.data<T>());
      }
    }
    if (lstm() && lo > 0) st.c0 = zeros({batch, n}, dtype);  // c0 out of reach
    return st;
  }

  // A projected LSTM's step at time t, before its cell's backward: m = o * tanh(c') from the
  // saved output gate (dgt [B, 4H], still the activations) and c' [B, H]; dW_hr += dh^T m
  // (when wanted) and dm = dh W_hr [B, H]. A finished element (h' = h) adds nothing.
  template <class T>
  void project_backward(const T* dgt, const T* c, const T* dh, T* m, T* dm, const T* w_hr, Tensor& dw_hr,
                        std::int64_t t, std::int64_t batch, std::int64_t n, std::int64_t p, std::int64_t gh) const {
    const detail::KernelTable<T>& kernels = detail::kernels<T>();
    for (std::int64_t b = 0; b < batch; ++b) {
      T* row = m + b * n;
      if (!runs(t, b)) {
        std::fill(row, row + n, T(0));
        continue;
      }
      kernels.tanh_row(c + b * n, row, n);
      const T* o = dgt + b * gh + 3 * n;
      for (std::int64_t j = 0; j < n; ++j) row[j] *= o[j];
    }
    if (dw_hr.defined()) blas::gemm(true, false, p, n, batch, T(1), dh, p, m, n, T(1), dw_hr.data<T>(), n);
    blas::gemm(false, false, batch, n, p, T(1), dh, p, w_hr, n, T(0), dm, n);
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
                         std::int64_t batch, std::int64_t n, const T* w_hh, std::int64_t tiles) const {
    const auto& gru_rows = detail::kernels<T>().gru;
    const std::int64_t gh = 3 * n;
    auto blend_of_rows = [&](std::int64_t begin, std::int64_t end) {
      if (reset_inside())
        for (std::int64_t b = begin; b < end; ++b)
          for (std::int64_t j = 0; j < n; ++j) rh[b * n + j] = dgt[b * gh + j] * hprev[b * n + j];
      for (std::int64_t b = begin; b < end; ++b)
        gru_rows.backward_blend(dgt + b * gh, hprev + b * n, dh + b * n, direct + b * n, n);
    };
    if (reset_inside()) {
      blas::for_each_step_range(batch, tiles,
                    [&](std::int64_t, std::int64_t begin, std::int64_t end) { blend_of_rows(begin, end); });
      // r h's gradient dn W_hn, into the reset gate's and h_prev's.
      blas::gemm(false, false, batch, n, n, T(1), dgt + 2 * n, gh, w_hh + 2 * n * n, n, T(0), d_rh, n);
      blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
        for (std::int64_t b = begin; b < end; ++b)
          gru_rows.backward_reset_inner(dgt + b * gh, d_rh + b * n, hprev + b * n, direct + b * n, n);
      });
      return;
    }
    const T* hn = saved->hn.data<T>() + t * batch * n;
    blas::for_each_step_range(batch, tiles, [&](std::int64_t, std::int64_t begin, std::int64_t end) {
      blend_of_rows(begin, end);
      for (std::int64_t b = begin; b < end; ++b) {
        gru_rows.backward_reset_scaled(dgt + b * gh, hn + b * n, drt + b * gh + 2 * n, n);
        std::copy(dgt + b * gh, dgt + b * gh + 2 * n, drt + b * gh);
      }
    });
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
    auto optional = [&](In r) { return slots.has(r) ? arg(in, r) : Var(); };
    const CellWeights w{arg(in, In::w_ih), arg(in, In::w_hh), optional(In::b_ih), optional(In::b_hh),
                        optional(In::w_hr)};
    const FusedOutputs out = detail::scan_recurrence_split(options, arg(in, In::x), w, arg(in, In::h0), optional(In::c0));
    std::vector<Var> wanted;
    for (std::size_t i = 0; i < in.size(); ++i)
      if (a.needs_grad(i)) wanted.push_back(in[i]);
    // The outputs' rows, then an LSTM's final cell state: row T of grad when packed, else apart.
    const std::int64_t steps = a.inputs[0].size(0);
    Var total = sum(out.outputs * (packs_cell() ? slice(a.grad, 0, 0, steps) : a.grad));
    const Var cell_grad = packs_cell() ? index(a.grad, 0, steps) : (a.more_grads.empty() ? Var() : a.more_grads[0]);
    if (lstm() && cell_grad.defined()) total = total + sum(out.c_n * cell_grad);
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
  const CellDescriptor& cell = describe(o.kind);
  detail::check_cell_arguments(op, cell.gate_count(), x, h0, cell.cell_state ? &c0 : nullptr, w,
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
  auto add = [&](const Var& v, In role) {
    if (!v.defined()) return;
    op.slots.at[static_cast<std::size_t>(role)] = static_cast<std::int8_t>(inputs.size());
    inputs.push_back(v);
  };
  if (describe(options.kind).cell_state) add(c0, In::c0);
  add(w.b_ih, In::b_ih);
  add(w.b_hh, In::b_hh);
  add(w.w_hr, In::w_hr);
  return {std::move(op), std::move(inputs)};
}

}  // namespace

Var fused_recurrence(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w, const Var& h0,
                     const Var& c0) {
  if (w.w_hr.defined())  // row T would be c [B, H] below h's rows [B, P]
    fail<ValueError>(FusedRecurrence::name, "a projected LSTM (argument 'w_hr') returns its final cell state apart: "
                     "call fused_recurrence_split");
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
