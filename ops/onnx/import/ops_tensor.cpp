// Ops that make tensors or read their metadata: Constant, ConstantOfShape, Shape, Size,
// Range, Cast. Their results are constants (no gradient flows through them), except Cast
// between float and double (recur's cast: the gradient is cast back) and to the dtype a
// value already has.
#include <cmath>

#include <recur/core/creation.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

Tensor int64_vector(const std::vector<std::int64_t>& values) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(values.size())}, DType::int64);
  std::copy(values.begin(), values.end(), t.data<std::int64_t>());
  return t;
}

Tensor float_vector(const ::google::protobuf::RepeatedField<float>& values) {
  Tensor t = Tensor::empty({values.size()}, DType::float32);
  std::copy(values.begin(), values.end(), t.data<float>());
  return t;
}

std::vector<Var> constant_import(const NodeContext& c) {
  const auto where = c.describe();
  if (const auto* a = c.attribute("value")) return {constant(tensor_from_proto(a->t(), where))};
  if (const auto* a = c.attribute("value_float")) return {constant(full({}, a->f(), DType::float32))};
  if (const auto* a = c.attribute("value_int")) return {constant(int64_vector({a->i()}).view({}))};  // exact, not via double
  if (const auto* a = c.attribute("value_floats")) return {constant(float_vector(a->floats()))};
  if (const auto ints = c.ints_attr("value_ints")) return {constant(int64_vector(*ints))};
  c.unsupported("only the value, value_float(s) and value_int(s) forms are imported");
}

std::vector<Var> constant_of_shape_import(const NodeContext& c) {
  Shape shape;
  for (auto d : c.ints_input(0)) shape.push_back(d);
  Tensor fill = full({}, 0.0, DType::float32);
  if (const auto* a = c.attribute("value")) fill = tensor_from_proto(a->t(), c.describe());
  if (fill.numel() != 1) c.invalid("value must hold one element");
  Tensor out = Tensor::empty(shape, fill.dtype());  // the value copied as it is (an int64 exactly)
  dispatch(out.dtype(), [&]<class T>() { std::fill_n(out.data<T>(), out.numel(), fill.data<T>()[0]); });
  return {constant(out)};
}

// Shape's start and end (opset 15) follow Slice's rules, with step 1.
std::vector<Var> shape_import(const NodeContext& c) {
  const Shape& s = c.input(0).shape();
  const auto rank = static_cast<std::int64_t>(s.size());
  const auto clamp_axis = [rank](std::int64_t a) { return std::clamp(a < 0 ? a + rank : a, std::int64_t{0}, rank); };
  const std::int64_t start = clamp_axis(c.int_attr("start", 0));
  const std::int64_t end = clamp_axis(c.int_attr("end", rank));
  std::vector<std::int64_t> dims;
  for (std::int64_t i = start; i < end; ++i) dims.push_back(s[static_cast<std::size_t>(i)]);
  return {constant(int64_vector(dims))};
}

std::vector<Var> size_import(const NodeContext& c) {
  return {constant(full({}, static_cast<double>(c.input(0).numel()), DType::int64))};
}

std::vector<Var> range_import(const NodeContext& c) {
  check_same_dtype(c, c.input(0), c.input(1));
  check_same_dtype(c, c.input(0), c.input(2));
  const double start = scalar_value(c, c.input(0), "start");
  const double limit = scalar_value(c, c.input(1), "limit");
  const double delta = scalar_value(c, c.input(2), "delta");
  if (delta == 0) c.invalid("delta is 0");
  const double count = std::max(0.0, std::ceil((limit - start) / delta));
  if (!(count < 1e15)) c.invalid("the range from ", start, " to ", limit, " by ", delta, " is too long");
  const auto n = static_cast<std::int64_t>(count);
  Tensor out = Tensor::empty({n}, c.input(0).dtype());
  dispatch(out.dtype(), [&]<class T>() {
    T* p = out.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = element_cast<T>(start + static_cast<double>(i) * delta, "onnx Range");
  });
  return {constant(out)};
}

// The int64 values of `t` as ONNX's narrower integer type `Narrow` holds them: the higher
// bits dropped and the rest read in two's complement (200 as int8 is -56), as ONNX says.
template <class Narrow>
Tensor wrapped(Tensor t) {
  std::int64_t* p = t.data<std::int64_t>();
  for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<Narrow>(p[i]);  // modular since C++20
  return t;
}

// Cast. Floats to integers truncate toward zero; a float that int64 cannot hold (NaN, inf,
// |v| >= 2^63) is a ValueError (ONNX leaves it undefined). Integers to a narrower type wrap.
std::vector<Var> cast_import(const NodeContext& c) {
  const Var& x = c.input(0);
  const std::int64_t to_attr = c.required_int_attr("to");
  if (to_attr < 0 || to_attr > INT32_MAX) c.invalid("attribute 'to' = ", to_attr, " is not an element type");
  const auto to = static_cast<std::int32_t>(to_attr);
  const DType d = dtype_of_element_type(to, c.describe() + ": attribute 'to'");
  if (to == ::onnx::TensorProto::BOOL) {
    const Tensor f = x.value().to(DType::float64);
    Tensor out = Tensor::empty(f.shape(), DType::int64);
    for (std::int64_t i = 0; i < f.numel(); ++i) out.data<std::int64_t>()[i] = f.data<double>()[i] != 0 ? 1 : 0;
    return {constant(out)};
  }
  const Var held = converted(c, x, d);
  if (d != DType::int64) return {held};
  switch (to) {
    case ::onnx::TensorProto::INT32: return {constant(wrapped<std::int32_t>(held.value().clone()))};
    case ::onnx::TensorProto::INT16: return {constant(wrapped<std::int16_t>(held.value().clone()))};
    case ::onnx::TensorProto::INT8: return {constant(wrapped<std::int8_t>(held.value().clone()))};
    case ::onnx::TensorProto::UINT32: return {constant(wrapped<std::uint32_t>(held.value().clone()))};
    case ::onnx::TensorProto::UINT16: return {constant(wrapped<std::uint16_t>(held.value().clone()))};
    case ::onnx::TensorProto::UINT8: return {constant(wrapped<std::uint8_t>(held.value().clone()))};
    default: return {held};
  }
}

}  // namespace

void add_tensor_ops(Registry& r) {
  r.add("Constant", {constant_import});
  r.add("ConstantOfShape", {constant_of_shape_import});
  r.add("Shape", {shape_import});
  r.add("Size", {size_import});
  r.add("Range", {range_import});
  r.add("Cast", {cast_import, 6});  // before opset 6 `to` was a string
}

}  // namespace recur::onnx_io::detail
