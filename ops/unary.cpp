#include <recur/ops/unary.hpp>

#include <cmath>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/kernels/fast_math_detail.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>

namespace recur {
namespace {

// One struct per function: the scalar forward `f` and the derivative rule `df`, written
// with ops so that it is differentiable again. Unary<F> turns it into an op. A function
// may also give `dfast(g, x, y)`, the same derivative on scalars: plain backward (V =
// Tensor) then runs it as one fused loop instead of several ops. The gradient table checks
// both forms: first order runs dfast, second order differentiates df.
template <class F>
concept HasFusedDerivative = requires(double v) { F::dfast(v, v, v); };

// F has a whole-tensor kernel F::rows(in, out, n) besides its per-element F::f.
template <class F, class T>
concept HasRowKernel = requires(const T* in, T* out, std::int64_t n) { F::rows(in, out, n); };

template <class F>
struct Unary {
  static constexpr std::string_view name = F::name;
  static constexpr bool elementwise = true;
  Tensor forward(const Tensor& x) const {
    return dispatch_floating(name, x.dtype(), [&]<class T>() { return forward_as<T>(x); });
  }
  // A member template, not the lambda above: Clang checks F::rows in a generic lambda's
  // discarded branch as soon as Unary<F> is instantiated.
  template <class T>
  static Tensor forward_as(const Tensor& x) {
    if constexpr (HasRowKernel<F, T>) {
      Tensor out = Tensor::empty(x.shape(), x.dtype());
      F::rows(x.data<T>(), out.data<T>(), x.numel());
      return out;
    } else {
      return unary_map<T>(x, [](T v) { return F::f(v); });
    }
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor> && HasFusedDerivative<F>) {
      return {fused_derivative(a.grad, a.inputs[0], a.output)};
    } else {
      return {F::df(a.grad, a.inputs[0], a.output)};
    }
  }
  static Tensor fused_derivative(const Tensor& g, const Tensor& x, const Tensor& y) {
    return dispatch_floating(name, g.dtype(), [&]<class T>() {
      Tensor out = Tensor::empty(g.shape(), g.dtype());
      const T *pg = g.data<T>(), *px = x.data<T>(), *py = y.data<T>();
      T* po = out.data<T>();
      for (std::int64_t i = 0, n = g.numel(); i < n; ++i) po[i] = F::dfast(pg[i], px[i], py[i]);
      return out;
    });
  }
};

struct ExpF {
  static constexpr std::string_view name = "exp";
  template <class T> static T f(T x) { return std::exp(x); }
  template <class V> static V df(const V& g, const V&, const V& y) { return mul(g, y); }
  template <class T> static T dfast(T g, T, T y) { return g * y; }
};
struct LogF {
  static constexpr std::string_view name = "log";
  template <class T> static T f(T x) { return std::log(x); }
  template <class V> static V df(const V& g, const V& x, const V&) { return div(g, x); }
  template <class T> static T dfast(T g, T x, T) { return g / x; }
};
struct SqrtF {
  static constexpr std::string_view name = "sqrt";
  template <class T> static T f(T x) { return std::sqrt(x); }
  template <class V> static V df(const V& g, const V&, const V& y) { return div(mul(g, scalar_like(y, 0.5)), y); }
};
struct AbsF {
  static constexpr std::string_view name = "abs";
  template <class T> static T f(T x) { return std::abs(x); }
  // sign(x) as a constant: 1 for x > 0, -1 for x < 0, 0 at 0.
  template <class V> static V df(const V& g, const V& x, const V&) {
    const Tensor& v = value_of(x);
    return mul(g, lift(g, sub(greater(v, scalar_like(v, 0.0)), less(v, scalar_like(v, 0.0)))));
  }
};
struct TanhF {
  static constexpr std::string_view name = "tanh";
  template <class T> static T f(T x) { return std::tanh(x); }
  // Whole tensors take the vectorised kernel of the fused layers (within 3 ulp).
  template <class T> static void rows(const T* x, T* y, std::int64_t n) { nn::detail::kernels<T>().tanh_row(x, y, n); }
  template <class V> static V df(const V& g, const V&, const V& y) { return mul(g, sub(scalar_like(y, 1.0), mul(y, y))); }
  template <class T> static T dfast(T g, T, T y) { return g * (T(1) - y * y); }
};
struct SigmoidF {
  static constexpr std::string_view name = "sigmoid";
  template <class T> static T f(T x) {
    if (x >= 0) return T(1) / (T(1) + std::exp(-x));
    const T e = std::exp(x);
    return e / (T(1) + e);
  }
  // The kernel clamps exp's argument, which leaves sigmoid(-inf) at 1e-308 instead of the
  // exact 0 that losses on infinite logits rely on: the far negative tail takes f.
  // (Whether any x is that far is found first, by a loop the compiler vectorises: the loop
  // that calls f cost as much as the kernel itself in a captured LSTM's chain.)
  template <class T> static void rows(const T* x, T* y, std::int64_t n) {
    nn::detail::kernels<T>().sigmoid_row(x, nullptr, y, n);
    constexpr T far = -detail::MathTraits<T>::exp_hi;
    int any_far = 0;
    for (std::int64_t i = 0; i < n; ++i) any_far |= x[i] < far ? 1 : 0;
    if (!any_far) return;
    for (std::int64_t i = 0; i < n; ++i)
      if (x[i] < far) y[i] = f(x[i]);
  }
  template <class V> static V df(const V& g, const V&, const V& y) { return mul(g, mul(y, sub(scalar_like(y, 1.0), y))); }
  template <class T> static T dfast(T g, T, T y) { return g * y * (T(1) - y); }
};
struct ReluF {
  static constexpr std::string_view name = "relu";
  // NaN passes through, as in NumPy and PyTorch (x > 0 ? x : 0 would make it 0).
  template <class T> static T f(T x) { return x <= 0 ? T(0) : x; }
  template <class V> static V df(const V& g, const V& x, const V&) {
    const Tensor& v = value_of(x);
    return mul(g, lift(g, greater(v, scalar_like(v, 0.0))));
  }
  template <class T> static T dfast(T g, T x, T) { return x > 0 ? g : T(0); }
};
struct SoftplusF {
  static constexpr std::string_view name = "softplus";
  template <class T> static T f(T x) { return std::max(x, T(0)) + std::log1p(std::exp(-std::abs(x))); }
  template <class V> static V df(const V& g, const V& x, const V&) { return mul(g, sigmoid(x)); }
};

struct Clip {
  static constexpr std::string_view name = "clip";
  static constexpr bool elementwise = true;
  double lo, hi;
  OpAttributes attributes() const { return {{"lo", lo}, {"hi", hi}}; }
  Tensor forward(const Tensor& x) const {
    if (!(lo <= hi)) fail<ValueError>(name, "argument 'lo' = ", lo, " must not exceed 'hi' = ", hi);
    return dispatch_floating(name, x.dtype(), [&]<class T>() {
      const T l = static_cast<T>(lo), h = static_cast<T>(hi);
      return unary_map<T>(x, [=](T v) { return v < l ? l : (v > h ? h : v); });
    });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const Tensor& v = value_of(a.inputs[0]);
    return {mul(a.grad, lift(a.grad, mul(greater_equal(v, scalar_like(v, lo)), less_equal(v, scalar_like(v, hi)))))};
  }
};

}  // namespace

RECUR_EXPOSE_FAMILY(RECUR_EXPOSE_UNARY, Unary, (exp, ExpF), (log, LogF), (sqrt, SqrtF), (abs, AbsF), (tanh, TanhF),
                    (sigmoid, SigmoidF), (relu, ReluF), (softplus, SoftplusF))

Tensor clip(const Tensor& x, double lo, double hi) { return Clip{lo, hi}.forward(x); }
Var clip(const Var& x, double lo, double hi) { return record(Clip{lo, hi}, x); }

namespace detail {
template <class T>
void tanh_values(const T* x, T* y, std::int64_t n) {
  TanhF::rows(x, y, n);
}
template <class T>
void sigmoid_values(const T* x, T* y, std::int64_t n) {
  SigmoidF::rows(x, y, n);
}
template void tanh_values(const float*, float*, std::int64_t);
template void tanh_values(const double*, double*, std::int64_t);
template void sigmoid_values(const float*, float*, std::int64_t);
template void sigmoid_values(const double*, double*, std::int64_t);
}  // namespace detail

}  // namespace recur
