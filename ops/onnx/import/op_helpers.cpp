#include <recur/ops/onnx/import/op_helpers_detail.hpp>

#include <recur/ops/cast.hpp>

namespace recur::onnx_io::detail {

Var converted(const NodeContext& c, const Var& v, DType d) {
  if (v.dtype() == d) return v;
  if (is_floating(v.dtype()) && is_floating(d)) return cast(v, d);  // differentiable: the gradient is cast back
  if (v.requires_grad())
    c.unsupported("converting a value that needs a gradient from ", v.dtype(), " to ", d,
                  " (an integer carries no gradient)");
  return constant(v.value().to(d));
}

void check_same_dtype(const NodeContext& c, const Var& a, const Var& b) {
  if (a.dtype() != b.dtype()) c.invalid("inputs of different element types: ", a.dtype(), " and ", b.dtype());
}

std::int64_t normalized_axis(const NodeContext& c, std::int64_t axis, std::int64_t rank) {
  if (axis < -rank || axis >= rank) c.invalid("axis ", axis, " is out of range for rank ", rank);
  return axis < 0 ? axis + rank : axis;
}

double scalar_value(const NodeContext& c, const Var& v, const char* what) {
  if (v.numel() != 1) c.invalid(what, " must hold one element, got shape ", to_string(v.shape()));
  return v.value().item<double>();
}

std::int64_t integer_value(const NodeContext& c, const Var& v, const char* what) {
  if (v.dtype() != DType::int64) c.invalid(what, " must be an integer, got ", v.dtype());
  if (v.numel() != 1) c.invalid(what, " must hold one element, got shape ", to_string(v.shape()));
  return v.value().item<std::int64_t>();
}

}  // namespace recur::onnx_io::detail
