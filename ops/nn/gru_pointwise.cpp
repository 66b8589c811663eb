// The GRU step's elementwise part as one op (PyTorch's equations: the reset gate scales
// h W_hn^T + b_hn, not h). Plain backward recomputes the activations from the inputs, so
// the op stays a pure function of them (see lstm_pointwise.cpp).
#include <vector>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/nn/pointwise.hpp>
#include <recur/ops/nn/pointwise_detail.hpp>
#include <recur/ops/unary.hpp>

namespace recur::nn {
namespace {

struct GruPointwise {
  static constexpr std::string_view name = "gru_pointwise";

  Tensor forward(const Tensor& xproj, const Tensor& hproj, const Tensor& h) const {
    detail::check_step_argument(name, xproj, "xproj", 3, h, "h");
    detail::check_step_argument(name, hproj, "hproj", 3, h, "h");
    const std::int64_t batch = h.size(0), n = h.size(1);
    Tensor out = Tensor::empty(h.shape(), h.dtype());
    dispatch_floating(name, h.dtype(), [&]<class T>() {
      const T *px = xproj.data<T>(), *ph = hproj.data<T>(), *pv = h.data<T>();
      T* po = out.data<T>();
      std::vector<T> act(static_cast<std::size_t>(3 * n));
      const auto forward_row = detail::kernels<T>().gru.forward;
      for (std::int64_t b = 0; b < batch; ++b, px += 3 * n, ph += 3 * n, pv += n, po += n)
        forward_row(px, ph, pv, po, act.data(), n);
    });
    return out;
  }

  // dn = g (1 - z), dz = g (h - n), dh = g z; through n's pre-activation a_n = x_n + r h_n
  // to x_n, h_n (times r) and r; the reset and update pre-activations feed x and h alike.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      return fused(a.grad, a.inputs[0], a.inputs[1], a.inputs[2]);
    } else {
      const V& g = a.grad;
      const V& h = a.inputs[2];
      const std::vector<V> x = split(a.inputs[0], 1, 3), hp = split(a.inputs[1], 1, 3);
      const V r = sigmoid(x[0] + hp[0]), z = sigmoid(x[1] + hp[1]), cand = tanh(x[2] + r * hp[2]);
      const V dn = g * (1.0 - z) * (1.0 - cand * cand);
      const V dr = dn * hp[2] * r * (1.0 - r), dz = g * (h - cand) * z * (1.0 - z);
      return {concat({dr, dz, dn}, 1), concat({dr, dz, dn * r}, 1), g * z};
    }
  }

  static Grads<Tensor> fused(const Tensor& grad, const Tensor& xproj, const Tensor& hproj, const Tensor& h) {
    const std::int64_t batch = h.size(0), n = h.size(1);
    Tensor dx = Tensor::empty(xproj.shape(), xproj.dtype()), dhp = Tensor::empty(hproj.shape(), hproj.dtype());
    Tensor dh = Tensor::empty(h.shape(), h.dtype());
    dispatch_floating(name, h.dtype(), [&]<class T>() {
      const T *px = xproj.data<T>(), *ph = hproj.data<T>(), *pv = h.data<T>(), *pg = grad.data<T>();
      T *qx = dx.data<T>(), *qh = dhp.data<T>(), *qv = dh.data<T>();
      const auto backward_row = detail::kernels<T>().gru.backward;
      for (std::int64_t b = 0; b < batch; ++b, px += 3 * n, ph += 3 * n, pv += n, pg += n, qx += 3 * n, qh += 3 * n, qv += n)
        backward_row(px, ph, pv, pg, qx, qh, qv, n);
    });
    return {dx, dhp, dh};
  }
};

}  // namespace

Tensor gru_pointwise(const Tensor& xproj, const Tensor& hproj, const Tensor& h) {
  return GruPointwise{}.forward(xproj, hproj, h);
}
Var gru_pointwise(const Var& xproj, const Var& hproj, const Var& h) {
  return record(GruPointwise{}, xproj, hproj, h);
}

}  // namespace recur::nn
