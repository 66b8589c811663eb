// Reductions: ReduceSum, ReduceMean, ReduceMax, ReduceMin, ReduceProd (axes an attribute,
// or an input from opset 13 for ReduceSum), and the softmax family along an axis.
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/softmax.hpp>

namespace recur::onnx_io::detail {
namespace {

#define RECUR_ONNX_REDUCTION(Name, fn)                                \
  struct Name {                                                       \
    template <class V>                                                \
    static V apply(const V& x, const Axes& axes, bool keepdims) {     \
      return fn(x, axes, keepdims);                                   \
    }                                                                 \
  };
RECUR_ONNX_REDUCTION(Sum, sum)
RECUR_ONNX_REDUCTION(Mean, mean)
RECUR_ONNX_REDUCTION(Max, max)
RECUR_ONNX_REDUCTION(Min, min)
RECUR_ONNX_REDUCTION(Prod, prod)
#undef RECUR_ONNX_REDUCTION

// `axes_input_since`: the opset from which the axes are input 1 instead of an attribute.
template <class F, std::int64_t axes_input_since>
std::vector<Var> reduce_import(const NodeContext& c) {
  const Var& x = c.input(0);
  std::optional<std::vector<std::int64_t>> given;
  if (c.opset() < axes_input_since) given = c.ints_attr("axes");
  else if (c.has_input(1)) given = c.ints_input(1);
  if (given && given->empty()) given.reset();
  if (!given && c.opset() >= axes_input_since && c.int_attr("noop_with_empty_axes", 0) != 0) return {x};
  Axes axes;
  if (given) {
    for (auto a : *given) axes.push_back(normalized_axis(c, a, x.rank()));
  } else {
    for (std::int64_t i = 0; i < x.rank(); ++i) axes.push_back(i);  // every axis (also of a scalar: none)
  }
  const bool keepdims = c.int_attr("keepdims", 1) != 0;
  if (axes.empty()) return {x};
  if (x.dtype() == DType::int64)
    return {integer_via_float64([&](const Tensor& t) { return F::apply(t, axes, keepdims); }, x)};
  return {F::apply(x, axes, keepdims)};
}

// Before opset 13 Softmax and LogSoftmax flatten the input to [before axis, from axis on]
// and normalize each row; from 13 on they normalize along the one axis (default -1).
template <Var (*normalize)(const Var&, std::int64_t)>
std::vector<Var> softmax_import(const NodeContext& c) {
  const Var& x = c.input(0);
  if (c.opset() >= 13) return {normalize(x, c.int_attr("axis", -1))};
  const std::int64_t axis = normalized_axis(c, c.int_attr("axis", 1), x.rank());
  std::int64_t rows = 1;
  for (std::int64_t i = 0; i < axis; ++i) rows *= x.size(i);
  const std::int64_t cols = rows == 0 ? 0 : x.numel() / rows;
  return {reshape(normalize(reshape(x, Shape{rows, cols}), 1), x.shape())};
}

}  // namespace

void add_reduce_ops(Registry& r) {
  r.add("ReduceSum", {reduce_import<Sum, 13>});
  // Their axes become an input in opset 18, which this ONNX library (1.12) does not know.
  r.add("ReduceMean", {reduce_import<Mean, 18>});
  r.add("ReduceMax", {reduce_import<Max, 18>});
  r.add("ReduceMin", {reduce_import<Min, 18>});
  r.add("ReduceProd", {reduce_import<Prod, 18>});
  r.add("Softmax", {softmax_import<softmax>});
  r.add("LogSoftmax", {softmax_import<log_softmax>});
}

}  // namespace recur::onnx_io::detail
