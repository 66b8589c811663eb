#include <cstring>
#include <limits>
#include <utility>
#include <vector>

#include <onnx/defs/tensor_proto_util.h>
#include <onnx/onnx-data_pb.h>

#include <recur/ops/onnx/model.hpp>
#include <recur/ops/onnx/model_bytes_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

using ::onnx::TensorProto;

template <class Out, class In>
Tensor tensor_of(const Shape& shape, const std::vector<In>& values, std::string_view where) {
  if (static_cast<std::uint64_t>(numel(shape)) != values.size())
    fail<IOError>("onnx", where, ": the tensor holds ", values.size(), " elements, its shape ", to_string(shape),
                  " needs another number");
  Tensor t = Tensor::empty(shape, dtype_of<Out>());
  Out* out = t.data<Out>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<Out>(values[i]);
  return t;
}

// Bytes per element in raw_data (little-endian, fixed width); 0 for the types recur does
// not hold.
std::size_t raw_element_size(std::int32_t element_type) {
  switch (element_type) {
    case TensorProto::DOUBLE: case TensorProto::INT64: return 8;
    case TensorProto::FLOAT: case TensorProto::INT32: case TensorProto::UINT32: return 4;
    case TensorProto::INT16: case TensorProto::UINT16: return 2;
    case TensorProto::INT8: case TensorProto::UINT8: case TensorProto::BOOL: return 1;
    default: return 0;
  }
}

// The shape of `proto`, checked against its raw_data before anything parses the bytes: a
// length that is not exactly the shape's elements times the element size (short of one
// element, or not a multiple of it) is an IOError, never a read past the buffer.
Shape checked_shape(const TensorProto& proto, std::string_view where) {
  Shape shape;
  for (auto d : proto.dims()) {
    if (d < 0) fail<IOError>("onnx", where, ": the tensor has a negative dimension ", d);
    shape.push_back(d);
  }
  std::int64_t count = 0;
  try {
    count = numel(shape);
  } catch (const ShapeError&) {
    fail<IOError>("onnx", where, ": the tensor's shape ", to_string(shape), " has more elements than an int64 can count");
  }
  if (proto.has_raw_data()) {
    const std::size_t element = raw_element_size(proto.data_type());
    std::uint64_t bytes = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(count), element, &bytes) || bytes != proto.raw_data().size())
      fail<IOError>("onnx", where, ": raw_data holds ", proto.raw_data().size(), " bytes, a tensor of shape ",
                    to_string(shape), " of ", element, "-byte elements needs ", count, " x ", element);
  }
  return shape;
}

// The small integer types (and bool) are stored in raw_data as little-endian fixed-width
// values, or else widened in int32_data (uint32 and uint64 in uint64_data), where a value
// the type cannot hold (1000 as int8) is an IOError naming `where`.
template <class Small>
std::vector<std::int64_t> small_integers(const TensorProto& proto, std::string_view where) {
  std::vector<std::int64_t> out;
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    out.resize(raw.size() / sizeof(Small));
    for (std::size_t i = 0; i < out.size(); ++i) {
      Small v;
      std::memcpy(&v, raw.data() + i * sizeof(Small), sizeof(Small));
      out[i] = static_cast<std::int64_t>(v);
    }
    return out;
  }
  const auto widened = [&](const auto& values) {
    for (const auto v : values) {
      if (std::cmp_less(v, std::numeric_limits<Small>::min()) || std::cmp_greater(v, std::numeric_limits<Small>::max()))
        fail<IOError>("onnx", where, ": the value ", v, " is outside the tensor's element type");
      out.push_back(static_cast<std::int64_t>(v));
    }
  };
  if constexpr (sizeof(Small) >= 4 && !std::is_signed_v<Small>) widened(proto.uint64_data());
  else widened(proto.int32_data());
  return out;
}

}  // namespace

DType dtype_of_element_type(std::int32_t element_type, std::string_view where) {
  switch (element_type) {
    case TensorProto::FLOAT: return DType::float32;
    case TensorProto::DOUBLE: return DType::float64;
    case TensorProto::INT64: case TensorProto::INT32: case TensorProto::INT16: case TensorProto::INT8:
    case TensorProto::UINT32: case TensorProto::UINT16: case TensorProto::UINT8: case TensorProto::BOOL:
      return DType::int64;
    default: break;
  }
  const auto* name = TensorProto::DataType_descriptor()->FindValueByNumber(element_type);
  throw UnsupportedError(::recur::detail::concat(
      "recur::onnx: ", where, ": element type ", name ? name->name() : std::to_string(element_type),
      " is not supported (recur holds float, double, int64, and int8-32, uint8-32 and bool as int64)"));
}

Tensor tensor_from_proto(const TensorProto& proto, std::string_view where) {
  if (proto.data_location() == TensorProto::EXTERNAL)
    throw UnsupportedError(::recur::detail::concat("recur::onnx: ", where, ": tensors stored in external files are not supported"));
  dtype_of_element_type(proto.data_type(), where);
  const Shape shape = checked_shape(proto, where);
  try {
    switch (proto.data_type()) {
      case TensorProto::FLOAT: return tensor_of<float>(shape, ::onnx::ParseData<float>(&proto), where);
      case TensorProto::DOUBLE: return tensor_of<double>(shape, ::onnx::ParseData<double>(&proto), where);
      case TensorProto::INT64: return tensor_of<std::int64_t>(shape, ::onnx::ParseData<std::int64_t>(&proto), where);
      case TensorProto::INT32: return tensor_of<std::int64_t>(shape, ::onnx::ParseData<std::int32_t>(&proto), where);
      case TensorProto::INT16: return tensor_of<std::int64_t>(shape, small_integers<std::int16_t>(proto, where), where);
      case TensorProto::INT8: return tensor_of<std::int64_t>(shape, small_integers<std::int8_t>(proto, where), where);
      case TensorProto::UINT32: return tensor_of<std::int64_t>(shape, small_integers<std::uint32_t>(proto, where), where);
      case TensorProto::UINT16: return tensor_of<std::int64_t>(shape, small_integers<std::uint16_t>(proto, where), where);
      case TensorProto::UINT8: return tensor_of<std::int64_t>(shape, small_integers<std::uint8_t>(proto, where), where);
      default: return tensor_of<std::int64_t>(shape, small_integers<std::uint8_t>(proto, where), where);  // BOOL, 1 byte each
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail<IOError>("onnx", where, ": cannot read the tensor: ", e.what());
  }
}

}  // namespace recur::onnx_io::detail

namespace recur::onnx_io {

Tensor load_tensor(const std::string& path) {
  const std::string bytes = detail::read_proto_file(path, "onnx_io::load_tensor");
  ::onnx::TensorProto proto;
  if (!proto.ParseFromString(bytes)) fail<IOError>("onnx_io::load_tensor", "'", path, "' is not a serialized TensorProto");
  return detail::tensor_from_proto(proto, "'" + path + "'");
}

std::vector<Tensor> load_sequence(const std::string& path) {
  const std::string bytes = detail::read_proto_file(path, "onnx_io::load_sequence");
  ::onnx::SequenceProto proto;
  if (!proto.ParseFromString(bytes) || proto.elem_type() != ::onnx::SequenceProto::TENSOR)
    fail<IOError>("onnx_io::load_sequence", "'", path, "' is not a serialized SequenceProto of tensors");
  std::vector<Tensor> out;
  for (const auto& t : proto.tensor_values()) out.push_back(detail::tensor_from_proto(t, "'" + path + "'"));
  return out;
}

}  // namespace recur::onnx_io
