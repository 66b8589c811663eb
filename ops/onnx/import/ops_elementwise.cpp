// Elementwise ops: Add, Sub, Mul, Div, Pow, Min, Max, Neg, Abs, Exp, Log, Sqrt, Tanh,
// Sigmoid, Relu, Softplus, Reciprocal, Clip. Floating inputs record recur's op; integer inputs (no
// gradient) compute through float64.
#include <algorithm>

#include <cmath>
#include <limits>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/unary.hpp>

namespace recur::onnx_io::detail {
namespace {

// Each op as a type, usable on Tensors and Vars alike.
#define RECUR_ONNX_FUNCTION(Name, expr) \
  struct Name {                         \
    template <class V>                  \
    static V apply(const V& x) {        \
      return expr;                      \
    }                                   \
  };
#define RECUR_ONNX_FUNCTION2(Name, expr)         \
  struct Name {                                  \
    template <class V>                           \
    static V apply(const V& a, const V& b) {     \
      return expr;                               \
    }                                            \
  };
RECUR_ONNX_FUNCTION(Neg, neg(x))
RECUR_ONNX_FUNCTION(Abs, abs(x))
RECUR_ONNX_FUNCTION(Exp, exp(x))
RECUR_ONNX_FUNCTION(Log, log(x))
RECUR_ONNX_FUNCTION(Sqrt, sqrt(x))
RECUR_ONNX_FUNCTION(Tanh, tanh(x))
RECUR_ONNX_FUNCTION(Sigmoid, sigmoid(x))
RECUR_ONNX_FUNCTION(Relu, relu(x))
RECUR_ONNX_FUNCTION(Softplus, softplus(x))
RECUR_ONNX_FUNCTION(Reciprocal, 1.0 / x)
RECUR_ONNX_FUNCTION2(Add, add(a, b))
RECUR_ONNX_FUNCTION2(Sub, sub(a, b))
RECUR_ONNX_FUNCTION2(Mul, mul(a, b))
RECUR_ONNX_FUNCTION2(Div, div(a, b))
RECUR_ONNX_FUNCTION2(Pow, pow(a, b))
RECUR_ONNX_FUNCTION2(Min, minimum(a, b))
RECUR_ONNX_FUNCTION2(Max, maximum(a, b))
#undef RECUR_ONNX_FUNCTION
#undef RECUR_ONNX_FUNCTION2

template <class F>
std::vector<Var> unary(const NodeContext& c) {
  const Var& x = c.input(0);
  if (x.dtype() == DType::int64) return {integer_via_float64([](const Tensor& t) { return F::apply(t); }, x)};
  return {F::apply(x)};
}

template <class F>
Var binary_of(const NodeContext& c, const Var& a, const Var& b) {
  if (a.dtype() == DType::int64 && b.dtype() == DType::int64)
    return integer_via_float64([](const Tensor& x, const Tensor& y) { return F::apply(x, y); }, a, b);
  check_same_dtype(c, a, b);
  return F::apply(a, b);
}

template <class F>
std::vector<Var> binary(const NodeContext& c) {
  return {binary_of<F>(c, c.input(0), c.input(1))};
}

// Integer division by zero is undefined in ONNX and in C++: a ValueError naming the node.
std::vector<Var> div_import(const NodeContext& c) {
  const Tensor& divisor = c.input(1).value();
  if (c.input(0).dtype() == DType::int64 && divisor.dtype() == DType::int64) {
    const std::int64_t* d = divisor.data<std::int64_t>();
    if (std::find(d, d + divisor.numel(), 0) != d + divisor.numel()) c.invalid("integer division by zero (input 1 holds 0)");
  }
  return binary<Div>(c);
}

// Pow's exponent may have another type than its base (opset 12 on): it is converted.
std::vector<Var> pow_import(const NodeContext& c) {
  const Var& base = c.input(0);
  return {binary_of<Pow>(c, base, converted(c, c.input(1), base.dtype()))};
}

// Min and Max take one or more inputs, broadcast together.
template <class F>
std::vector<Var> variadic(const NodeContext& c) {
  Var acc = c.input(0);
  for (std::size_t i = 1; i < c.input_count(); ++i) acc = binary_of<F>(c, acc, c.input(i));
  return {acc};
}

// Clip's bounds are attributes before opset 11 and optional inputs from it on.
std::vector<Var> clip_import(const NodeContext& c) {
  const Var& x = c.input(0);
  double lo = -std::numeric_limits<double>::infinity();
  double hi = std::numeric_limits<double>::infinity();
  if (c.opset() < 11) {
    lo = c.float_attr("min", static_cast<float>(lo));
    hi = c.float_attr("max", static_cast<float>(hi));
  } else {
    if (c.has_input(1)) lo = scalar_value(c, c.input(1), "min");
    if (c.has_input(2)) hi = scalar_value(c, c.input(2), "max");
  }
  if (x.dtype() == DType::int64) return {integer_via_float64([&](const Tensor& t) { return clip(t, lo, hi); }, x)};
  return {clip(x, lo, hi)};
}

}  // namespace

void add_elementwise_ops(Registry& r) {
  r.add("Neg", {unary<Neg>});
  r.add("Abs", {unary<Abs>});
  r.add("Exp", {unary<Exp>});
  r.add("Log", {unary<Log>});
  r.add("Sqrt", {unary<Sqrt>});
  r.add("Tanh", {unary<Tanh>});
  r.add("Sigmoid", {unary<Sigmoid>});
  r.add("Relu", {unary<Relu>});
  r.add("Softplus", {unary<Softplus>});
  r.add("Reciprocal", {unary<Reciprocal>});
  // Before opset 7 binary ops broadcast only with the `broadcast` attribute: not imported.
  r.add("Add", {binary<Add>, 7});
  r.add("Sub", {binary<Sub>, 7});
  r.add("Mul", {binary<Mul>, 7});
  r.add("Div", {div_import, 7});
  r.add("Pow", {pow_import, 7});
  r.add("Min", {variadic<Min>, 8});
  r.add("Max", {variadic<Max>, 8});
  r.add("Clip", {clip_import, 6});
}

}  // namespace recur::onnx_io::detail
