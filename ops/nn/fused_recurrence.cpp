// The fused layer op (fused_recurrence.hpp): its forward loop over time and its backward
// in cuDNN's two parts, the time loop here (BackwardData) and the input and weight
// gradients in fused_backward_weights.cpp (BackwardWeights). The cells' arithmetic is the
// plain kernels of cell_kernels_detail.hpp, the LSTM's replay of the cell states
// cell_replay_detail.hpp; under create_graph backward differentiates the scan of cells
// (scan_recurrence.hpp).
#include <recur/ops/nn/fused_recurrence.hpp>

#include <algorithm>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <recur/autodiff/record.hpp>
#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/nn/cell_kernels_detail.hpp>
#include <recur/ops/nn/cell_replay_detail.hpp>
#include <recur/ops/nn/fused_recurrence_detail.hpp>
#include <recur/ops/nn/scan_recurrence.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn {
namespace {

using detail::FusedGeometry;

// The gradients of the initial states that BackwardData yields (c0's LSTM only).
struct StateGradients {
  Tensor h0, c0;
};

struct FusedRecurrence {
  static constexpr std::string_view name = "fused_recurrence";
  FusedRecurrenceOptions options;
  std::int8_t c0_at = -1, b_ih_at = -1, b_hh_at = -1;  // input positions after x, w_ih, w_hh, h0
  std::shared_ptr<detail::LstmSaved> saved = std::make_shared<detail::LstmSaved>();

  bool lstm() const { return options.kind == CellKind::lstm; }
  Grads<Tensor> saved_tensors() const { return {saved->act, saved->cells}; }
  void drop_saved() const { *saved = detail::LstmSaved{}; }  // a released checkpoint segment: replay remakes them

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

  // b_ih + b_hh (either may be absent) as one row, or empty.
  template <class T>
  std::vector<T> bias_row(std::span<const Tensor> in, std::int64_t width) const {
    std::vector<T> bias;
    for (std::int8_t at : {b_ih_at, b_hh_at}) {
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
    Tensor out = lstm() ? Tensor::empty({steps + 1, batch, n}, x.dtype()) : pre;
    const std::int64_t interval = detail::replay_interval(steps);
    Tensor cells = lstm() ? Tensor::empty({(steps - 1) / interval, batch, n}, x.dtype()) : Tensor();
    std::vector<T> ring(lstm() ? static_cast<std::size_t>(2 * hrows) : 0);  // c_{t-1} and c_t
    std::vector<T> scratch(static_cast<std::size_t>(n));
    T* h = out.data<T>();
    const T* hp = h0.data<T>();
    const T* cp = lstm() ? in[static_cast<std::size_t>(c0_at)].data<T>() : nullptr;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = geo.time_of(s);
      T* g = p + t * rows;
      T* ht = h + t * hrows;
      blas::gemm(false, true, batch, gh, n, T(1), hp, n, w_hh.data<T>(), n, T(1), g, gh);  // += h W_hh^T
      if (!bias.empty())
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < gh; ++j) g[b * gh + j] += bias[static_cast<std::size_t>(j)];
      if (lstm()) {
        T* c = ring.data() + (s % 2) * hrows;
        for (std::int64_t b = 0; b < batch; ++b)
          detail::LstmKernel<T>::forward(g + b * gh, g + b * gh, cp + b * n, c + b * n, ht + b * n, scratch.data(), n);
        if ((s + 1) % interval == 0 && s + 1 < steps)  // the entry state of the next segment
          std::copy(c, c + hrows, cells.data<T>() + ((s + 1) / interval - 1) * hrows);
        cp = c;
      } else {
        detail::RnnKernel<T>::forward(g, hrows, options.nonlinearity);
      }
      hp = ht;
    }
    if (lstm()) {
      std::copy(cp, cp + hrows, h + steps * hrows);  // the final cell state, row T
      *saved = {pre, cells, interval};
    }
    return out;
  }

  template <class T>
  Grads<Tensor> backward_as(const BackwardArgs<Tensor>& a) const {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(a.inputs[i]);
    if (lstm() && !saved->act.defined()) forward_as<T>(in);  // a second backward: recompute
    const FusedGeometry geo = geometry(in);
    // The gradients of the pre-activations: in place of the activations for an LSTM.
    Tensor dgates = lstm() ? saved->act : Tensor::empty({geo.steps, geo.batch, geo.gh}, in[0].dtype());
    const StateGradients states = backward_data<T>(geo, in, a.output, a.grad, dgates.data<T>(), a.needs_grad(3));
    if (lstm()) saved->act = Tensor();  // now gradients, no longer activations

    auto wants = [&](std::int8_t at) { return at >= 0 && a.needs_grad(static_cast<std::size_t>(at)); };
    const detail::WeightGradients w = detail::backward_weights<T>(
        geo, dgates.data<T>(), in[0], in[1], a.output.data<T>(), in[3].data<T>(),
        {.x = a.needs_grad(0), .w_ih = a.needs_grad(1), .w_hh = a.needs_grad(2), .bias = wants(b_ih_at) || wants(b_hh_at)});
    Grads<Tensor> g(a.inputs.size());
    g[0] = w.x;
    g[1] = w.w_ih;
    g[2] = w.w_hh;
    if (a.needs_grad(3)) g[3] = states.h0;
    if (wants(c0_at)) g[static_cast<std::size_t>(c0_at)] = states.c0;
    if (wants(b_ih_at)) g[static_cast<std::size_t>(b_ih_at)] = w.bias;
    if (wants(b_hh_at))  // each input's gradient a buffer of its own
      g[static_cast<std::size_t>(b_hh_at)] = wants(b_ih_at) ? w.bias.clone() : w.bias;
    return g;
  }

  // BackwardData: the time loop from the last step down to the window's first. It turns
  // dg [T, B, G*H] (an LSTM's saved activations; for an RNN any buffer) into the gradients
  // of the pre-activations in place, and yields the gradients reaching h0 and c0 (zero
  // when truncation keeps them out of reach; h0's computed only if want_h0).
  template <class T>
  StateGradients backward_data(const FusedGeometry& geo, std::span<const Tensor> in, const Tensor& output,
                               const Tensor& grad, T* dg, bool want_h0) const {
    const std::int64_t steps = geo.steps, batch = geo.batch, n = geo.n, gh = geo.gh, lo = geo.lo;
    const std::int64_t rows = batch * gh, hrows = batch * n;
    const T* w_hh = in[2].data<T>();
    const T* h = output.data<T>();
    const T* up = grad.data<T>();
    // dh: the whole gradient reaching h at the current step, its upstream row plus what the
    // step after it sends back (added by the gemm, beta = 1, so no separate pass).
    std::vector<T> dh(static_cast<std::size_t>(hrows)), scratch(static_cast<std::size_t>(n));
    auto upstream = [&](std::int64_t s) {
      const T* row = up + geo.time_of(s) * hrows;
      std::copy(row, row + hrows, dh.begin());
    };
    // dc: the gradient reaching the cell state of the current step, from the final state's
    // upstream row on.
    StateGradients d{zeros({batch, n}, in[0].dtype()), lstm() ? zeros({batch, n}, in[0].dtype()) : Tensor()};
    T* dc = lstm() ? d.c0.data<T>() : nullptr;
    if (geo.count() > 0) {
      upstream(steps - 1);
      if (lstm()) std::copy(up + steps * hrows, up + (steps + 1) * hrows, dc);
    }
    std::optional<detail::CellReplay<T>> cells;
    if (lstm()) cells.emplace(*saved, dg, in[static_cast<std::size_t>(c0_at)].data<T>(), steps, batch, n, geo.reverse);
    for (std::int64_t s = steps - 1; s >= lo; --s) {
      T* dgt = dg + geo.time_of(s) * rows;
      if (lstm()) {
        const auto [c, c_prev] = cells->at(s);  // replays before the step overwrites its activations
        for (std::int64_t b = 0; b < batch; ++b)
          detail::LstmKernel<T>::backward(dgt + b * gh, c_prev + b * n, c + b * n, dh.data() + b * n, dc + b * n,
                                          scratch.data(), n);
      } else {
        detail::RnnKernel<T>::backward(h + geo.time_of(s) * hrows, dh.data(), dgt, hrows, options.nonlinearity);
      }
      // dh_{t-1} += dgates_t W_hh; for the first step that is h0's gradient.
      if (s > lo) {
        upstream(s - 1);
        blas::gemm(false, false, batch, n, gh, T(1), dgt, gh, w_hh, n, T(1), dh.data(), n);
      } else if (lo == 0 && want_h0) {
        blas::gemm(false, false, batch, n, gh, T(1), dgt, gh, w_hh, n, T(0), d.h0.data<T>(), n);
      }
    }
    if (lstm() && lo > 0) d.c0 = zeros({batch, n}, in[0].dtype());  // c0 out of reach
    return d;
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
    const Var total = sum(out * a.grad);
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
  if (o.kind == CellKind::gru) fail<ValueError>(op, "runs RNN and LSTM cells; a GRU runs through scan");
  if (o.truncate_gradient < -1)
    fail<ValueError>(op, "option 'truncate_gradient' must be -1 (no truncation) or >= 0, got ", o.truncate_gradient);
  const bool lstm = o.kind == CellKind::lstm;
  detail::check_cell_arguments(op, lstm ? 4 : 1, x, h0, lstm ? &c0 : nullptr, w,
                               {.sequence = true, .h = "h0", .c = "c0"});
  if (!is_floating(x.dtype())) fail<DTypeError>(op, "expects float32 or float64, got ", x.dtype());
}

}  // namespace

Var fused_recurrence(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w, const Var& h0,
                     const Var& c0) {
  check_arguments(options, x, w, h0, c0);
  FusedRecurrence op{options};
  std::vector<Var> inputs{x, w.w_ih, w.w_hh, h0};
  auto add = [&](const Var& v, std::int8_t& at) {
    if (!v.defined()) return;
    at = static_cast<std::int8_t>(inputs.size());
    inputs.push_back(v);
  };
  if (options.kind == CellKind::lstm) add(c0, op.c0_at);
  add(w.b_ih, op.b_ih_at);
  add(w.b_hh, op.b_hh_at);
  return record_list(std::move(op), inputs);
}

}  // namespace recur::nn
