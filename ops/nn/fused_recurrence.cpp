// The fused layer direction (fused_recurrence.hpp): forward and backward of the whole
// loop over time, the per-cell arithmetic in LstmRows and RnnRows, the loop and the BLAS
// calls shared in FusedRecurrence.
#include <recur/ops/nn/fused_recurrence.hpp>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include <recur/autodiff/record.hpp>
#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/nn/direction.hpp>
#include <recur/ops/nn/pointwise_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn {
namespace {

// LSTM, gate order i, f, g, o. A step turns the pre-activations [B, 4H] into activations in
// place and writes c_t and h_t; backward turns the activations into the gradients of the
// pre-activations in place and carries dc to the step before.
template <class T>
struct LstmRows {
  // c_t = f c_{t-1} + i g from the activations [B, 4H]: forward, and backward's replay of
  // the cell states, run this same code, so the replay is bit-identical.
  static void cell_update(const T* act, const T* c_prev, T* c, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) c[j] = act[n + j] * c_prev[j] + act[j] * act[2 * n + j];
  }
  static void cell_updates(const T* act, const T* c_prev, T* c, std::int64_t batch, std::int64_t n) {
    for (std::int64_t b = 0; b < batch; ++b) cell_update(act + b * 4 * n, c_prev + b * n, c + b * n, n);
  }

  static void forward(T* act, const T* c_prev, T* c, T* h, std::int64_t batch, std::int64_t n, T* scratch) {
    for (std::int64_t b = 0; b < batch; ++b, act += 4 * n, c_prev += n, c += n, h += n) {
      detail::sigmoid_row<T>(act, nullptr, act, 2 * n);
      detail::tanh_row(act + 2 * n, act + 2 * n, n);
      detail::sigmoid_row<T>(act + 3 * n, nullptr, act + 3 * n, n);
      cell_update(act, c_prev, c, n);
      detail::tanh_row(c, scratch, n);
      for (std::int64_t j = 0; j < n; ++j) h[j] = act[3 * n + j] * scratch[j];
    }
  }

  // dh: the whole gradient reaching h_t; dc: in, the gradient reaching c_t from later
  // steps; out, the one reaching c_{t-1}.
  static void backward(T* act, const T* c_prev, const T* c, const T* dh, T* dc, std::int64_t batch, std::int64_t n,
                       T* scratch) {
    for (std::int64_t b = 0; b < batch; ++b, act += 4 * n, c_prev += n, c += n, dh += n, dc += n) {
      detail::tanh_row(c, scratch, n);
      for (std::int64_t j = 0; j < n; ++j) {
        const T i = act[j], f = act[n + j], g = act[2 * n + j], o = act[3 * n + j], tc = scratch[j];
        const T d = dc[j] + dh[j] * o * (T(1) - tc * tc);
        act[j] = d * g * i * (T(1) - i);
        act[n + j] = d * c_prev[j] * f * (T(1) - f);
        act[2 * n + j] = d * i * (T(1) - g * g);
        act[3 * n + j] = dh[j] * tc * o * (T(1) - o);
        dc[j] = d * f;
      }
    }
  }
};

// Elman RNN: h_t = act(pre) in place; the derivative is read off h_t.
template <class T>
struct RnnRows {
  static void forward(T* pre, std::int64_t count, Nonlinearity act) {
    if (act == Nonlinearity::tanh) {
      detail::tanh_row(pre, pre, count);
    } else {
      for (std::int64_t j = 0; j < count; ++j) pre[j] = pre[j] > 0 ? pre[j] : T(0);
    }
  }
  static void backward(const T* h, const T* dh, T* dpre, std::int64_t count, Nonlinearity act) {
    if (act == Nonlinearity::tanh) {
      for (std::int64_t j = 0; j < count; ++j) dpre[j] = dh[j] * (T(1) - h[j] * h[j]);
    } else {
      for (std::int64_t j = 0; j < count; ++j) dpre[j] = h[j] > 0 ? dh[j] : T(0);
    }
  }
};

// What an LSTM's backward needs beyond the inputs and the output: the gate activations
// [T, B, 4H], and the cell states at every `interval`-th step of the loop, from which
// backward replays the others a segment at a time (an elementwise pass: c_t from c_{t-1}
// and the activations), so the cell states cost O(sqrt(T)) memory, not O(T). Backward
// overwrites the activations with the gate gradients and drops them; a second backward
// through the same node runs forward again first.
struct Saved {
  Tensor act;
  Tensor cells;  // [segments - 1, B, H]: c after loop steps interval - 1, 2 interval - 1, ...
  std::int64_t interval = 1;
};

std::int64_t replay_interval(std::int64_t steps) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(steps)))));
}

// The cell states c_{s} (after loop step s) and c_{s-1} for s running down from the last
// step, replayed from the saved checkpoints one segment of `interval` steps at a time.
template <class T>
class CellReplay {
 public:
  CellReplay(const Saved& saved, const T* act, const T* c0, std::int64_t steps, std::int64_t batch, std::int64_t n,
             bool reverse)
      : saved_(saved), act_(act), c0_(c0), steps_(steps), rows_(batch * n), batch_(batch), n_(n), reverse_(reverse),
        states_(static_cast<std::size_t>(saved.interval * batch * n)) {}

  // {c after loop step s, c before it}.
  std::pair<const T*, const T*> at(std::int64_t s) {
    const std::int64_t seg = s / saved_.interval, begin = seg * saved_.interval;
    if (seg != segment_) replay(seg, begin);
    const T* before = s == begin ? entry(seg) : state(s - begin - 1);
    return {state(s - begin), before};
  }

 private:
  const T* entry(std::int64_t seg) const {
    return seg == 0 ? c0_ : saved_.cells.data<T>() + (seg - 1) * rows_;
  }
  T* state(std::int64_t k) { return states_.data() + k * rows_; }
  void replay(std::int64_t seg, std::int64_t begin) {
    const std::int64_t end = std::min(steps_, begin + saved_.interval);
    const T* prev = entry(seg);
    for (std::int64_t s = begin; s < end; ++s) {
      const std::int64_t t = reverse_ ? steps_ - 1 - s : s;
      LstmRows<T>::cell_updates(act_ + t * batch_ * 4 * n_, prev, state(s - begin), batch_, n_);
      prev = state(s - begin);
    }
    segment_ = seg;
  }

  const Saved& saved_;
  const T *act_, *c0_;
  std::int64_t steps_, rows_, batch_, n_;
  bool reverse_;
  std::vector<T> states_;
  std::int64_t segment_ = -1;
};

struct FusedRecurrence {
  static constexpr std::string_view name = "fused_recurrence";
  FusedRecurrenceOptions options;
  std::int8_t c0_at = -1, b_ih_at = -1, b_hh_at = -1;  // input positions after x, w_ih, w_hh, h0
  std::shared_ptr<Saved> saved = std::make_shared<Saved>();

  bool lstm() const { return options.kind == CellKind::lstm; }
  Grads<Tensor> saved_tensors() const { return {saved->act, saved->cells}; }
  void drop_saved() const { *saved = Saved{}; }  // a released checkpoint segment: replay remakes them

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
  // Step s of the loop runs time step t(s).
  std::int64_t time_of(std::int64_t s, std::int64_t steps) const { return options.reverse ? steps - 1 - s : s; }

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
    const std::int64_t steps = x.size(0), batch = x.size(1), width = x.size(2), n = h0.size(1);
    const std::int64_t gh = w_hh.size(0), rows = batch * gh;
    // The input projection of every step at once; for an RNN it becomes the output.
    Tensor pre = Tensor::empty({steps, batch, gh}, x.dtype());
    T* p = pre.data<T>();
    blas::gemm(false, true, steps * batch, gh, width, T(1), x.data<T>(), width, w_ih.data<T>(), width, T(0), p, gh);
    const std::vector<T> bias = bias_row<T>(in, gh);
    Tensor out = lstm() ? Tensor::empty({steps + 1, batch, n}, x.dtype()) : pre;
    const std::int64_t interval = replay_interval(steps);
    Tensor cells = lstm() ? Tensor::empty({(steps - 1) / interval, batch, n}, x.dtype()) : Tensor();
    std::vector<T> ring(lstm() ? static_cast<std::size_t>(2 * batch * n) : 0);
    std::vector<T> scratch(static_cast<std::size_t>(n));
    T* h = out.data<T>();
    const T* hp = h0.data<T>();
    const T* cp = lstm() ? in[static_cast<std::size_t>(c0_at)].data<T>() : nullptr;
    for (std::int64_t s = 0; s < steps; ++s) {
      const std::int64_t t = time_of(s, steps);
      T* g = p + t * rows;
      blas::gemm(false, true, batch, gh, n, T(1), hp, n, w_hh.data<T>(), n, T(1), g, gh);  // += h W_hh^T
      if (!bias.empty())
        for (std::int64_t b = 0; b < batch; ++b)
          for (std::int64_t j = 0; j < gh; ++j) g[b * gh + j] += bias[static_cast<std::size_t>(j)];
      if (lstm()) {
        T* c = ring.data() + (s % 2) * batch * n;
        LstmRows<T>::forward(g, cp, c, h + t * batch * n, batch, n, scratch.data());
        if ((s + 1) % interval == 0 && s + 1 < steps)  // the entry state of the next segment
          std::copy(c, c + batch * n, cells.data<T>() + ((s + 1) / interval - 1) * batch * n);
        cp = c;
      } else {
        RnnRows<T>::forward(g, batch * n, options.nonlinearity);
      }
      hp = h + t * batch * n;
    }
    if (lstm()) {
      std::copy(cp, cp + batch * n, h + steps * batch * n);  // the final cell state, row T
      saved->act = pre;
      saved->cells = cells;
      saved->interval = interval;
    }
    return out;
  }

  template <class T>
  Grads<Tensor> backward_as(const BackwardArgs<Tensor>& a) const {
    std::vector<Tensor> in;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(a.inputs[i]);
    if (lstm() && !saved->act.defined()) forward_as<T>(in);  // a second backward: recompute
    const Tensor &x = in[0], &w_ih = in[1], &w_hh = in[2], &h0 = in[3];
    const std::int64_t steps = x.size(0), batch = x.size(1), width = x.size(2), n = h0.size(1);
    const std::int64_t gh = w_hh.size(0), rows = batch * gh, hrows = batch * n;
    const std::int64_t k = options.truncate_gradient;
    const std::int64_t lo = k >= 0 && k < steps ? steps - k : 0;  // loop steps [lo, steps) get gradients
    const std::int64_t count = steps - lo, first = options.reverse ? 0 : lo;  // their time steps
    // The gradients of the pre-activations: in place of the activations for an LSTM.
    Tensor dgates = lstm() ? saved->act : Tensor::empty({steps, batch, gh}, x.dtype());
    T* dg = dgates.data<T>();
    const T* h = a.output.data<T>();
    const T* grad = a.grad.data<T>();
    // dh: the whole gradient reaching h at the current step, its upstream row plus what the
    // step after it sends back (added by the gemm, beta = 1, so no separate pass).
    std::vector<T> dh(static_cast<std::size_t>(hrows)), scratch(static_cast<std::size_t>(n));
    auto upstream = [&](std::int64_t s) {
      const T* row = grad + time_of(s, steps) * hrows;
      std::copy(row, row + hrows, dh.begin());
    };
    Tensor dh0 = zeros({batch, n}, x.dtype()), dc = zeros({batch, n}, x.dtype());
    if (count > 0) upstream(steps - 1);
    if (lstm() && count > 0) std::copy(grad + steps * hrows, grad + (steps + 1) * hrows, dc.data<T>());
    std::optional<CellReplay<T>> cells;
    if (lstm()) cells.emplace(*saved, dg, in[static_cast<std::size_t>(c0_at)].data<T>(), steps, batch, n, options.reverse);
    for (std::int64_t s = steps - 1; s >= lo; --s) {
      const std::int64_t t = time_of(s, steps);
      if (lstm()) {
        const auto [c, c_prev] = cells->at(s);  // replays before the step overwrites its activations
        LstmRows<T>::backward(dg + t * rows, c_prev, c, dh.data(), dc.data<T>(), batch, n, scratch.data());
      } else {
        RnnRows<T>::backward(h + t * hrows, dh.data(), dg + t * rows, hrows, options.nonlinearity);
      }
      // dh_{t-1} += dgates_t W_hh; for the first step that is h0's gradient.
      if (s > lo) {
        upstream(s - 1);
        blas::gemm(false, false, batch, n, gh, T(1), dg + t * rows, gh, w_hh.data<T>(), n, T(1), dh.data(), n);
      } else if (lo == 0 && a.needs_grad(3)) {
        blas::gemm(false, false, batch, n, gh, T(1), dg + t * rows, gh, w_hh.data<T>(), n, T(0), dh0.data<T>(), n);
      }
    }
    if (lstm()) saved->act = Tensor();  // now gradients, no longer activations

    Grads<Tensor> g(a.inputs.size());
    const T* dgw = dg + first * rows;  // the window's gate gradients, [count * B, G*H]
    if (a.needs_grad(0)) {
      g[0] = zeros(x.shape(), x.dtype());
      if (count > 0)
        blas::gemm(false, false, count * batch, width, gh, T(1), dgw, gh, w_ih.data<T>(), width, T(0),
                   g[0].data<T>() + first * batch * width, width);
    }
    if (a.needs_grad(1)) {
      g[1] = zeros(w_ih.shape(), x.dtype());
      if (count > 0)
        blas::gemm(true, false, gh, width, count * batch, T(1), dgw, gh, x.data<T>() + first * batch * width, width,
                   T(1), g[1].data<T>(), width);
    }
    if (a.needs_grad(2)) g[2] = recurrent_weight_grad<T>(dg, h, h0.data<T>(), steps, batch, n, gh, lo);
    if (a.needs_grad(3)) g[3] = dh0;  // zero when truncation kept h0 out of reach
    if (lstm() && a.needs_grad(static_cast<std::size_t>(c0_at)))
      g[static_cast<std::size_t>(c0_at)] = lo == 0 ? dc : zeros(h0.shape(), x.dtype());
    Tensor db;
    for (std::int8_t at : {b_ih_at, b_hh_at}) {
      if (at < 0 || !a.needs_grad(static_cast<std::size_t>(at))) continue;
      if (!db.defined()) {
        db = zeros({gh}, x.dtype());
        T* d = db.data<T>();
        for (std::int64_t r = 0; r < count * batch; ++r)
          for (std::int64_t j = 0; j < gh; ++j) d[j] += dgw[r * gh + j];
        g[static_cast<std::size_t>(at)] = db;
      } else {
        g[static_cast<std::size_t>(at)] = db.clone();  // each input's gradient a buffer of its own
      }
    }
    return g;
  }

  // dW_hh = sum over the window's steps of dgates_t^T h_{prev(t)}: one gemm over every step
  // whose previous state is a row of the output, one more for the step that read h0.
  template <class T>
  Tensor recurrent_weight_grad(const T* dg, const T* h, const T* h0, std::int64_t steps, std::int64_t batch,
                               std::int64_t n, std::int64_t gh, std::int64_t lo) const {
    Tensor dw = zeros({gh, n}, dtype_of<T>());
    const std::int64_t count = steps - lo;
    if (count == 0) return dw;
    // Forward: steps t in [max(lo, 1), T) read h_{t-1}; reverse: t in [0, min(count, T-1)) read h_{t+1}.
    const std::int64_t t0 = options.reverse ? 0 : std::max<std::int64_t>(lo, 1);
    const std::int64_t inner = options.reverse ? std::min(count, steps - 1) : steps - t0;
    const std::int64_t from = options.reverse ? 1 : t0 - 1;
    if (inner > 0)
      blas::gemm(true, false, gh, n, inner * batch, T(1), dg + t0 * batch * gh, gh, h + from * batch * n, n, T(1),
                 dw.data<T>(), n);
    if (lo == 0) {  // the first step of the loop read h0
      const std::int64_t t = time_of(0, steps);
      blas::gemm(true, false, gh, n, batch, T(1), dg + t * batch * gh, gh, h0, n, T(1), dw.data<T>(), n);
    }
    return dw;
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
