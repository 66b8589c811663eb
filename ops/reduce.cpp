#include <recur/ops/reduce.hpp>

#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

// The reduced axes (normalized, sorted, unique), the shape of x with them set to 1, and
// the final shape (keepdims or not).
struct ReducedShapes {
  Axes axes;
  Shape kept, out;
};
ReducedShapes reduced_shapes(std::string_view op, const Shape& in, const Axes& axes, bool keepdims) {
  ReducedShapes r{normalize_axes(op, axes, in), in, {}};
  for (auto a : r.axes) r.kept[a] = 1;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (keepdims || std::find(r.axes.begin(), r.axes.end(), static_cast<std::int64_t>(i)) == r.axes.end())
      r.out.push_back(r.kept[i]);
  return r;
}

// What the backward rule of a reduction gets.
template <class V>
struct ReductionGrad {
  V grad;             // the output's gradient, broadcast back to x's shape
  const V& x;
  const V& y;         // the output
  const Shape& kept;  // x's shape with the reduced axes set to 1 (y's shape under keepdims)
  const Axes& axes;   // the reduced axes: normalized, sorted, unique
};

// One struct per reduction, turned into an op by Reduction<F>:
//   name;
//   start<T>(), combine<T>()   the fold's first value and step (combine may widen, see
//                              sum_combine: float32 runs then accumulate in double);
//   empty_is_error             true when an empty input has no answer (no identity);
//   df(ReductionGrad)          the gradient with respect to x, written with ops so that it
//                              is differentiable again (second order).
template <class F>
struct Reduction {
  static constexpr std::string_view name = F::name;
  Axes axes;  // empty: all
  bool keepdims;
  OpAttributes attributes() const { return {{"axes", ints_attribute(axes)}, {"keepdims", keepdims}}; }
  Tensor forward(const Tensor& x) const {
    const auto s = reduced_shapes(name, x.shape(), axes, keepdims);
    if (F::empty_is_error && x.numel() == 0)
      fail<ShapeError>(name, "argument 'x' of shape ", to_string(x.shape()), " is empty; ", name,
                       " has no identity to return");
    return dispatch_floating(name, x.dtype(), [&]<class T>() {
      return reduce_to_shape<T>(x, s.kept, F::template start<T>(), F::template combine<T>());
    }).view(s.out);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V& x = a.inputs[0];
    const auto s = reduced_shapes(name, x.shape(), axes, keepdims);
    return {F::df(ReductionGrad<V>{broadcast_to(reshape(a.grad, s.kept), x.shape()), x, a.output, s.kept, s.axes})};
  }
};

struct SumF {
  static constexpr std::string_view name = "sum";
  static constexpr bool empty_is_error = false;  // the empty sum is 0
  template <class T> static T start() { return T(0); }
  template <class T> static auto combine() { return sum_combine<T>(); }
  template <class V> static V df(const ReductionGrad<V>& r) { return r.grad; }
};

// max and min: NaN wins, as in NumPy and PyTorch (a comparison with NaN is false, so a
// plain "v > acc" would skip it). The gradient goes to the elements equal to the result,
// split evenly among ties; when the result is NaN, to the NaN elements.
template <class Before>  // Before(v, acc): v replaces the running extreme acc
struct ExtremeF {
  static constexpr bool empty_is_error = true;
  template <class T> static auto combine() {
    return [](T acc, T v) { return Before{}(v, acc) || std::isnan(v) ? v : acc; };
  }
  template <class V> static V df(const ReductionGrad<V>& r) {
    const Tensor& x = value_of(r.x);
    const Tensor y = value_of(r.y).view(r.kept);
    const Tensor hit = add(equal(x, y), mul(not_equal(x, x), not_equal(y, y)));  // x != x: x is NaN
    const Tensor share = div(hit, sum(hit, r.axes, true));
    return mul(r.grad, lift(r.grad, share));
  }
};
struct MaxF : ExtremeF<std::greater<>> {
  static constexpr std::string_view name = "max";
  template <class T> static T start() { return -std::numeric_limits<T>::infinity(); }
};
struct MinF : ExtremeF<std::less<>> {
  static constexpr std::string_view name = "min";
  template <class T> static T start() { return std::numeric_limits<T>::infinity(); }
};

// Products along the last axis of a matrix z [m, n], each of the elements before it
// (exclusive prefix products; from_back: of the elements after it). Doubling: after the
// step with shift d every entry holds the product of its 2d predecessors, so log2(n)
// multiplications of shifted copies; ones fill the places shifted in. Only products: exact
// with zeros, and made of ops, so differentiable again.
template <class V>
V products_before(const V& z, bool from_back) {
  const std::int64_t m = z.shape()[0], n = z.shape()[1];
  const auto shifted = [&](const V& p, std::int64_t d) {
    const V pad = lift(z, ones({m, d}, z.dtype()));
    return from_back ? concat({slice(p, 1, d, n), pad}, 1) : concat({pad, slice(p, 1, 0, n - d)}, 1);
  };
  V p = shifted(z, 1);
  for (std::int64_t d = 1; d < n; d *= 2) p = mul(p, shifted(p, d));
  return p;
}

// prod: the gradient of element i is the product of all the others in its slice, built
// from prefix and suffix products: no division by x, so zeros in x are exact, first and
// second order.
struct ProdF {
  static constexpr std::string_view name = "prod";
  static constexpr bool empty_is_error = false;  // the empty product is 1
  template <class T> static T start() { return T(1); }
  template <class T> static auto combine() {
    using Wide = std::conditional_t<std::is_same_v<T, float>, double, T>;  // as sum_combine
    return [](Wide acc, T v) { return acc * static_cast<Wide>(v); };
  }
  template <class V> static V df(const ReductionGrad<V>& r) {
    const Shape& in = r.x.shape();
    if (r.x.numel() == 0) return r.grad;
    // Kept axes first, reduced axes last, flattened to a matrix [kept elements, reduced ones].
    Axes order, back(in.size());
    for (std::size_t i = 0; i < in.size(); ++i)
      if (std::find(r.axes.begin(), r.axes.end(), static_cast<std::int64_t>(i)) == r.axes.end())
        order.push_back(static_cast<std::int64_t>(i));
    order.insert(order.end(), r.axes.begin(), r.axes.end());
    Shape permuted;
    std::int64_t n = 1;
    for (std::size_t k = 0; k < order.size(); ++k) {
      permuted.push_back(in[order[k]]);
      back[order[k]] = static_cast<std::int64_t>(k);
      if (k >= order.size() - r.axes.size()) n *= in[order[k]];
    }
    const V z = reshape(permute(r.x, order), {r.x.numel() / n, n});
    const V others = mul(products_before(z, false), products_before(z, true));
    return mul(r.grad, permute(reshape(others, permuted), back));
  }
};

std::int64_t reduced_count(std::string_view op, const Shape& in, const Axes& axes) {
  std::int64_t n = 1;
  for (auto a : normalize_axes(op, axes, in)) n *= in[a];
  return n;
}

}  // namespace

#define RECUR_DEFINE_REDUCTION(fn, F)                                                                        \
  Tensor fn(const Tensor& x, const Axes& axes, bool keepdims) { return Reduction<F>{axes, keepdims}.forward(x); } \
  Var fn(const Var& x, const Axes& axes, bool keepdims) { return record(Reduction<F>{axes, keepdims}, x); }
RECUR_DEFINE_REDUCTION(sum, SumF)
RECUR_DEFINE_REDUCTION(max, MaxF)
RECUR_DEFINE_REDUCTION(min, MinF)
RECUR_DEFINE_REDUCTION(prod, ProdF)
#undef RECUR_DEFINE_REDUCTION

// mean is sum scaled: no rule of its own to get wrong.
Tensor mean(const Tensor& x, const Axes& axes, bool keepdims) {
  return sum(x, axes, keepdims) / static_cast<double>(reduced_count("mean", x.shape(), axes));
}
Var mean(const Var& x, const Axes& axes, bool keepdims) {
  const auto n = static_cast<double>(reduced_count("mean", x.shape(), axes));
  return transactional(x, [&] { return sum(x, axes, keepdims) / n; });
}

}  // namespace recur
