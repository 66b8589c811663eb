// The fused layer op's BackwardWeights (fused_recurrence_detail.hpp): the gradients of the
// input, the weights and the biases from the gate gradients, a gemm or a sum each over
// every step of the window instead of a thin one per step.
#include <recur/ops/nn/fused_recurrence_detail.hpp>

#include <algorithm>

#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>

namespace recur::nn::detail {
namespace {

// dW_hh = sum over the window's steps of dgates_t^T h_{prev(t)}: one gemm over every step
// whose previous state is a row of the output, one more for the step that read h0. ONNX's
// GRU: those are only the first 2H rows; W_hn's are one gemm of dn with r h_prev.
template <class T>
Tensor recurrent_weight_grad(const FusedGeometry& geo, const GateGradients<T>& d, const T* h, const T* h0) {
  const std::int64_t steps = geo.steps, batch = geo.batch, n = geo.n, p = geo.p, gh = geo.gh, lo = geo.lo;
  const std::int64_t count = geo.count();
  const T* dg = d.recurrent;
  if (count == 0) return zeros({gh, p}, dtype_of<T>());
  // Each part of dw is written first by a product with beta 0, not zeroed first: a short
  // sequence's backward spent a fifth of its time zeroing it (nn::LSTM, 1 step, B1 H256, perf).
  Tensor dw = Tensor::empty({gh, p}, dtype_of<T>());
  const std::int64_t rows = d.reset_h ? 2 * n : gh;  // the rows of W_hh that multiply h_prev
  if (d.reset_h)  // (a GRU: p = n)
    blas::gemm(true, false, n, n, count * batch, T(1), dg + geo.first() * batch * gh + 2 * n, gh,
               d.reset_h + geo.first() * batch * n, n, T(0), dw.data<T>() + 2 * n * n, n);
  // Forward: steps t in [max(lo, 1), T) read h_{t-1}; reverse: t in [0, min(count, T-1)) read h_{t+1}.
  const std::int64_t t0 = geo.reverse ? 0 : std::max<std::int64_t>(lo, 1);
  const std::int64_t inner = geo.reverse ? std::min(count, steps - 1) : steps - t0;
  const std::int64_t from = geo.reverse ? 1 : t0 - 1;
  if (inner > 0)
    blas::gemm(true, false, rows, p, inner * batch, T(1), dg + t0 * batch * gh, gh, h + from * batch * p, p, T(0),
               dw.data<T>(), p);
  if (lo == 0) {  // the first step of the loop read h0
    const std::int64_t t = geo.time_of(0);
    blas::gemm(true, false, rows, p, batch, T(1), dg + t * batch * gh, gh, h0, p, inner > 0 ? T(1) : T(0),
               dw.data<T>(), p);
  }
  return dw;  // (lo > 0 leaves inner = count > 0: every row written)
}

// The sum over the window's steps and batch of the gate gradients dg (from the window's first row).
template <class T>
Tensor bias_grad(const FusedGeometry& geo, const T* dgw) {
  const std::int64_t gh = geo.gh;
  Tensor g = zeros({gh}, dtype_of<T>());
  T* d = g.data<T>();
  for (std::int64_t r = 0; r < geo.count() * geo.batch; ++r)
    for (std::int64_t j = 0; j < gh; ++j) d[j] += dgw[r * gh + j];
  return g;
}

}  // namespace

template <class T>
WeightGradients backward_weights(const FusedGeometry& geo, const GateGradients<T>& d, const Tensor& x,
                                 const Tensor& w_ih, const T* h, const T* h0, WantedWeightGradients wanted) {
  const std::int64_t batch = geo.batch, width = geo.width, gh = geo.gh, count = geo.count(), first = geo.first();
  const T* dgw = d.input + first * batch * gh;  // the window's gate gradients, [count * B, G*H]
  WeightGradients g;
  if (wanted.x) {
    g.x = zeros(x.shape(), x.dtype());
    if (count > 0)
      blas::gemm(false, false, count * batch, width, gh, T(1), dgw, gh, w_ih.data<T>(), width, T(0),
                 g.x.data<T>() + first * batch * width, width);
  }
  if (wanted.w_ih) {
    // beta 0, which writes every element: a narrow product may run transposed (core/blas_narrow_detail.hpp).
    g.w_ih = count > 0 ? Tensor::empty(w_ih.shape(), x.dtype()) : zeros(w_ih.shape(), x.dtype());
    if (count > 0)
      blas::gemm(true, false, gh, width, count * batch, T(1), dgw, gh, x.data<T>() + first * batch * width, width,
                 T(0), g.w_ih.data<T>(), width);
  }
  if (wanted.w_hh) g.w_hh = recurrent_weight_grad<T>(geo, d, h, h0);
  if (wanted.b_ih) g.b_ih = bias_grad<T>(geo, dgw);
  if (wanted.b_hh)  // each input's gradient a buffer of its own
    g.b_hh = d.recurrent == d.input && wanted.b_ih ? g.b_ih.clone() : bias_grad<T>(geo, d.recurrent + first * batch * gh);
  return g;
}

template WeightGradients backward_weights<float>(const FusedGeometry&, const GateGradients<float>&, const Tensor&,
                                                 const Tensor&, const float*, const float*, WantedWeightGradients);
template WeightGradients backward_weights<double>(const FusedGeometry&, const GateGradients<double>&, const Tensor&,
                                                  const Tensor&, const double*, const double*, WantedWeightGradients);

}  // namespace recur::nn::detail
