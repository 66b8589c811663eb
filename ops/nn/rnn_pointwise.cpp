// The Elman RNN step's elementwise part, act(xproj + hproj), as one op.
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/nn/pointwise.hpp>
#include <recur/ops/nn/pointwise_detail.hpp>

namespace recur::nn {
namespace {

struct RnnPointwise {
  static constexpr std::string_view name = "rnn_pointwise";
  Nonlinearity act = Nonlinearity::tanh;

  Tensor forward(const Tensor& xproj, const Tensor& hproj) const {
    detail::check_step_argument(name, xproj, "xproj", 1, hproj, "hproj");
    return dispatch_floating(name, xproj.dtype(), [&]<class T>() {
      if (act == Nonlinearity::relu)
        return binary_map<T>(name, xproj, hproj, [](T x, T h) { return x + h > 0 ? x + h : T(0); });
      Tensor y = binary_map<T>(name, xproj, hproj, [](T x, T h) { return x + h; });
      detail::tanh_row(y.data<T>(), y.data<T>(), y.numel());
      return y;
    });
  }

  // Both inputs get g act'(y); act' is read off the output y (relu's mask is a constant).
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    V d;
    if constexpr (std::is_same_v<V, Tensor>) {
      d = dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        if (act == Nonlinearity::tanh)
          return binary_map<T>(name, a.grad, a.output, [](T g, T y) { return g * (T(1) - y * y); });
        return binary_map<T>(name, a.grad, a.output, [](T g, T y) { return y > 0 ? g : T(0); });
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
