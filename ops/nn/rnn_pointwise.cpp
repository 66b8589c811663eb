// The Elman RNN step's elementwise part, act(xproj + hproj), as one op.
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/nn/pointwise.hpp>
#include <recur/ops/nn/pointwise_detail.hpp>

namespace recur::nn {
namespace {

struct RnnPointwise {
  static constexpr std::string_view name = "rnn_pointwise";
  Nonlinearity act = Nonlinearity::tanh;
  OpAttributes attributes() const { return {{"nonlinearity", std::string(name_of(act))}}; }

  Tensor forward(const Tensor& xproj, const Tensor& hproj) const {
    detail::check_step_argument(name, xproj, "xproj", 1, hproj, "hproj");
    return dispatch_floating(name, xproj.dtype(), [&]<class T>() {
      Tensor y = binary_map<T>(name, xproj, hproj, [](T x, T h) { return x + h; });
      detail::kernels<T>().rnn.forward(y.data<T>(), y.numel(), act);
      return y;
    });
  }

  // Both inputs get g act'(y); act' is read off the output y (relu's mask is a constant).
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    V d;
    if constexpr (std::is_same_v<V, Tensor>) {
      d = Tensor::empty(a.grad.shape(), a.grad.dtype());
      dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        detail::kernels<T>().rnn.backward(a.output.template data<T>(), a.grad.template data<T>(),
                                          d.template data<T>(), d.numel(), act);
      });
    } else if (act == Nonlinearity::tanh) {
      d = a.grad * (1.0 - a.output * a.output);
    } else {
      const Tensor& y = value_of(a.output);
      d = a.grad * lift(a.grad, greater(y, scalar_like(y, 0.0)));
    }
    return {d, d};
  }
};

}  // namespace

Tensor rnn_pointwise(const Tensor& xproj, const Tensor& hproj, Nonlinearity act) {
  return RnnPointwise{act}.forward(xproj, hproj);
}
Var rnn_pointwise(const Var& xproj, const Var& hproj, Nonlinearity act) {
  return record(RnnPointwise{act}, xproj, hproj);
}

}  // namespace recur::nn
