#include <recur/ops/reduce.hpp>

#include <limits>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

// The shape of x with the reduced axes set to 1, and the final shape (keepdims or not).
struct ReducedShapes {
  Shape kept, out;
};
ReducedShapes reduced_shapes(std::string_view op, const Shape& in, const Axes& axes, bool keepdims) {
  const Axes ax = normalize_axes(op, axes, in);
  ReducedShapes r{in, {}};
  for (auto a : ax) r.kept[a] = 1;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (keepdims || std::find(ax.begin(), ax.end(), static_cast<std::int64_t>(i)) == ax.end()) r.out.push_back(r.kept[i]);
  return r;
}

struct Sum {
  static constexpr std::string_view name = "sum";
  Axes axes;
  bool keepdims;
  Tensor forward(const Tensor& x) const {
    const auto s = reduced_shapes(name, x.shape(), axes, keepdims);
    return dispatch_floating(name, x.dtype(), [&]<class T>() {
      return reduce_to_shape<T>(x, s.kept, T(0), sum_combine<T>());
    }).view(s.out);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const Shape& in = a.inputs[0].shape();
    return {broadcast_to(reshape(a.grad, reduced_shapes(name, in, axes, keepdims).kept), in)};
  }
};

struct Max {
  static constexpr std::string_view name = "max";
  Axes axes;
  bool keepdims;
  Tensor forward(const Tensor& x) const {
    const auto s = reduced_shapes(name, x.shape(), axes, keepdims);
    if (x.numel() == 0) fail<ShapeError>(name, "argument 'x' of shape ", to_string(x.shape()), " is empty");
    return dispatch_floating(name, x.dtype(), [&]<class T>() {
      return reduce_to_shape<T>(x, s.kept, -std::numeric_limits<T>::infinity(),
                                [](T acc, T v) { return v > acc ? v : acc; });
    }).view(s.out);
  }
  // The gradient goes to the maxima, split evenly among ties.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const Tensor& x = value_of(a.inputs[0]);
    const Shape kept = reduced_shapes(name, x.shape(), axes, keepdims).kept;
    const Tensor hit = equal(x, value_of(a.output).view(kept));
    const Tensor share = div(hit, sum(hit, axes, true));
    return {mul(broadcast_to(reshape(a.grad, kept), x.shape()), lift(a.grad, share))};
  }
};

std::int64_t reduced_count(std::string_view op, const Shape& in, const Axes& axes) {
  std::int64_t n = 1;
  for (auto a : normalize_axes(op, axes, in)) n *= in[a];
  return n;
}

}  // namespace

Tensor sum(const Tensor& x, const Axes& axes, bool keepdims) { return Sum{axes, keepdims}.forward(x); }
Var sum(const Var& x, const Axes& axes, bool keepdims) { return record(Sum{axes, keepdims}, x); }
Tensor max(const Tensor& x, const Axes& axes, bool keepdims) { return Max{axes, keepdims}.forward(x); }
Var max(const Var& x, const Axes& axes, bool keepdims) { return record(Max{axes, keepdims}, x); }
// mean is sum scaled: no rule of its own to get wrong.
Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  return sum(x, axes, keepdims) / static_cast<double>(reduced_count("mean", x.shape(), axes));
}
Var mean(const Var& x, const Axes& axes, bool keepdims) {
  const auto n = static_cast<double>(reduced_count("mean", x.shape(), axes));
  return transactional(x, [&] { return sum(x, axes, keepdims) / n; });
}

}  // namespace recur
