#include <recur/ops/softmax.hpp>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/unary.hpp>

namespace recur {
namespace {

// The shift that keeps exp() in range: the maximum, or 0 when that is infinite (an all
// -inf lane then sums exp(-inf) = 0 instead of the NaN of -inf - -inf).
template <class T>
T finite_or_zero(T m) {
  return std::isfinite(m) ? m : T(0);
}

struct LogSumExp {
  static constexpr std::string_view name = "logsumexp";
  Axes axes;  // empty: all
  bool keepdims;
  OpAttributes attributes() const { return {{"axes", ints_attribute(axes)}, {"keepdims", keepdims}}; }

  // x's shape with the reduced axes set to 1 (keep) or dropped.
  Shape reduced_shape(const Shape& in, bool keep) const {
    const Axes ax = normalize_axes(name, axes, in);
    Shape out = in;
    for (auto a = ax.rbegin(); a != ax.rend(); ++a) {
      if (keep) out[*a] = 1;
      else out.erase(out.begin() + *a);
    }
    return out;
  }

  Tensor forward(const Tensor& x) const {
    const Shape kept = reduced_shape(x.shape(), true);
    return dispatch_floating(name, x.dtype(), [&]<class T>() {
      // Pass 1: the maximum of each reduced group, turned into a safe shift.
      Tensor shift = reduce_to_shape<T>(x, kept, -std::numeric_limits<T>::infinity(),
                                        [](T acc, T v) { return v > acc ? v : acc; });
      T* m = shift.data<T>();
      const std::int64_t groups = shift.numel();
      for (std::int64_t i = 0; i < groups; ++i) m[i] = finite_or_zero(m[i]);
      // Pass 2: sum of exp(x - shift) per group, then shift + log(sum).
      Tensor out = Tensor::empty(kept, x.dtype());
      T* z = out.data<T>();
      for (std::int64_t i = 0; i < groups; ++i) z[i] = T(0);
      const T* v = x.data<T>();
      const std::array<Shape, 2> strides{contiguous_strides(x.shape()), broadcast_strides(kept, x.shape())};
      for_each_run(x.shape(), strides, [&](const auto& off, std::int64_t n, const auto& st) {
        if (st[1] == 0) {
          const T s = m[off[1]];
          T acc = T(0);
          for (std::int64_t j = 0; j < n; ++j) acc += std::exp(v[off[0] + j * st[0]] - s);
          z[off[1]] += acc;
        } else {
          for (std::int64_t j = 0; j < n; ++j)
            z[off[1] + j * st[1]] += std::exp(v[off[0] + j * st[0]] - m[off[1] + j * st[1]]);
        }
      });
      for (std::int64_t i = 0; i < groups; ++i) z[i] = m[i] + std::log(z[i]);
      return out;
    }).view(reduced_shape(x.shape(), keepdims));
  }
  // d lse / dx = exp(x - lse) = softmax over the reduced axes.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V& x = a.inputs[0];
    const Shape kept = reduced_shape(x.shape(), true);
    return {mul(reshape(a.grad, kept), exp(sub(x, reshape(a.output, kept))))};
  }
};

// softmax and log_softmax along one axis. The tensor is seen as `outer` blocks of
// [n, inner] (n the softmax axis), so every pass over a block runs over contiguous rows of
// `inner` lanes at once, whatever the axis; each exp is computed once.
template <bool Log>
struct SoftmaxAlong {
  static constexpr std::string_view name = Log ? "log_softmax" : "softmax";
  std::int64_t axis;
  OpAttributes attributes() const { return {{"axis", axis}}; }

  Tensor forward(const Tensor& x) const {
    const std::int64_t ax = normalize_axis(name, axis, x.shape());
    const Shape& s = x.shape();
    const std::int64_t n = s[ax];
    std::int64_t inner = 1;
    for (std::size_t i = ax + 1; i < s.size(); ++i) inner *= s[i];
    const std::int64_t outer = n * inner == 0 ? 0 : x.numel() / (n * inner);
    Tensor out = Tensor::empty(s, x.dtype());
    if (x.numel() == 0) return out;  // nothing to do, and no [inner] buffers (inner may be huge)
    dispatch_floating(name, x.dtype(), [&]<class T>() {
      std::vector<T> shift(inner), total(inner);
      for (std::int64_t o = 0; o < outer; ++o) {
        const T* xb = x.data<T>() + o * n * inner;
        T* yb = out.data<T>() + o * n * inner;
        std::fill(shift.begin(), shift.end(), -std::numeric_limits<T>::infinity());
        for (std::int64_t k = 0; k < n; ++k)
          for (std::int64_t i = 0; i < inner; ++i) shift[i] = std::max(shift[i], xb[k * inner + i]);
        for (std::int64_t i = 0; i < inner; ++i) shift[i] = finite_or_zero(shift[i]);
        std::fill(total.begin(), total.end(), T(0));
        for (std::int64_t k = 0; k < n; ++k)
          for (std::int64_t i = 0; i < inner; ++i) {
            const T e = std::exp(xb[k * inner + i] - shift[i]);
            total[i] += e;
            if constexpr (!Log) yb[k * inner + i] = e;
          }
        if constexpr (Log) {
          for (std::int64_t i = 0; i < inner; ++i) total[i] = shift[i] + std::log(total[i]);
          for (std::int64_t k = 0; k < n; ++k)
            for (std::int64_t i = 0; i < inner; ++i) yb[k * inner + i] = xb[k * inner + i] - total[i];
        } else {
          for (std::int64_t i = 0; i < inner; ++i) total[i] = T(1) / total[i];
          for (std::int64_t k = 0; k < n; ++k)
            for (std::int64_t i = 0; i < inner; ++i) yb[k * inner + i] *= total[i];
        }
      }
    });
    return out;
  }
  // softmax: y * (g - sum(g * y)); log_softmax: g - softmax * sum(g), sums along the axis.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V& y = a.output;
    if constexpr (Log) return {sub(a.grad, mul(exp(y), sum(a.grad, {axis}, true)))};
    else return {mul(y, sub(a.grad, sum(mul(a.grad, y), {axis}, true)))};
  }
};

}  // namespace

Tensor logsumexp(const Tensor& x, const Axes& axes, bool keepdims) { return LogSumExp{axes, keepdims}.forward(x); }
Var logsumexp(const Var& x, const Axes& axes, bool keepdims) { return record(LogSumExp{axes, keepdims}, x); }
Tensor softmax(const Tensor& x, std::int64_t axis) { return SoftmaxAlong<false>{axis}.forward(x); }
Var softmax(const Var& x, std::int64_t axis) { return record(SoftmaxAlong<false>{axis}, x); }
Tensor log_softmax(const Tensor& x, std::int64_t axis) { return SoftmaxAlong<true>{axis}.forward(x); }
Var log_softmax(const Var& x, std::int64_t axis) { return record(SoftmaxAlong<true>{axis}, x); }

}  // namespace recur
