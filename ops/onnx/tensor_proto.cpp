#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <onnx/defs/tensor_proto_util.h>
#include <onnx/onnx-data_pb.h>

#include <recur/ops/onnx/model.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx::detail {
namespace {

using ::onnx::TensorProto;

Shape shape_of(const TensorProto& proto) {
  Shape shape;
  for (auto d : proto.dims()) shape.push_back(d);
  return shape;
}

template <class Out, class In>
Tensor tensor_of(const Shape& shape, const std::vector<In>& values, std::string_view where) {
  std::int64_t numel = 1;
  for (auto d : shape) {
    if (d < 0 || (d > 0 && numel > INT64_MAX / d)) {
      numel = -1;  // a corrupt shape: no allocation is tried
      break;
    }
    numel *= d;
  }
  if (numel < 0 || static_cast<std::uint64_t>(numel) != values.size())
    fail<IOError>("onnx", where, ": the tensor holds ", values.size(), " elements, its shape ", to_string(shape),
                  " needs another number");
  Tensor t = Tensor::empty(shape, dtype_of<Out>());
  Out* out = t.data<Out>();
  for (std::size_t i = 0; i < values.size(); ++i) out[i] = static_cast<Out>(values[i]);
  return t;
}

// The small integer types (and bool) are stored in raw_data as little-endian fixed-width
// values, or else widened in int32_data (uint32 and uint64 in uint64_data).
template <class Small>
std::vector<std::int64_t> small_integers(const TensorProto& proto) {
  std::vector<std::int64_t> out;
  if (proto.has_raw_data()) {
    const std::string& raw = proto.raw_data();
    out.resize(raw.size() / sizeof(Small));
    for (std::size_t i = 0; i < out.size(); ++i) {
      Small v;
      std::memcpy(&v, raw.data() + i * sizeof(Small), sizeof(Small));
      out[i] = static_cast<std::int64_t>(v);
    }
  } else if constexpr (sizeof(Small) >= 4 && !std::is_signed_v<Small>) {
    out.assign(proto.uint64_data().begin(), proto.uint64_data().end());
  } else {
    out.assign(proto.int32_data().begin(), proto.int32_data().end());
  }
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
  const Shape shape = shape_of(proto);
  dtype_of_element_type(proto.data_type(), where);
  try {
    switch (proto.data_type()) {
      case TensorProto::FLOAT: return tensor_of<float>(shape, ::onnx::ParseData<float>(&proto), where);
      case TensorProto::DOUBLE: return tensor_of<double>(shape, ::onnx::ParseData<double>(&proto), where);
      case TensorProto::INT64: return tensor_of<std::int64_t>(shape, ::onnx::ParseData<std::int64_t>(&proto), where);
      case TensorProto::INT32: return tensor_of<std::int64_t>(shape, ::onnx::ParseData<std::int32_t>(&proto), where);
      case TensorProto::INT16: return tensor_of<std::int64_t>(shape, small_integers<std::int16_t>(proto), where);
      case TensorProto::INT8: return tensor_of<std::int64_t>(shape, small_integers<std::int8_t>(proto), where);
      case TensorProto::UINT32: return tensor_of<std::int64_t>(shape, small_integers<std::uint32_t>(proto), where);
      case TensorProto::UINT16: return tensor_of<std::int64_t>(shape, small_integers<std::uint16_t>(proto), where);
      case TensorProto::UINT8: return tensor_of<std::int64_t>(shape, small_integers<std::uint8_t>(proto), where);
      default: return tensor_of<std::int64_t>(shape, small_integers<std::uint8_t>(proto), where);  // BOOL, 1 byte each
    }
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    fail<IOError>("onnx", where, ": cannot read the tensor: ", e.what());
  }
}

}  // namespace recur::onnx::detail

namespace recur::onnx {

Tensor load_tensor(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("onnx::load_tensor", "cannot open '", path, "'");
  ::onnx::TensorProto proto;
  if (!proto.ParseFromIstream(&in)) fail<IOError>("onnx::load_tensor", "'", path, "' is not a serialized TensorProto");
  return detail::tensor_from_proto(proto, "'" + path + "'");
}

std::vector<Tensor> load_sequence(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("onnx::load_sequence", "cannot open '", path, "'");
  ::onnx::SequenceProto proto;
  if (!proto.ParseFromIstream(&in) || proto.elem_type() != ::onnx::SequenceProto::TENSOR)
    fail<IOError>("onnx::load_sequence", "'", path, "' is not a serialized SequenceProto of tensors");
  std::vector<Tensor> out;
  for (const auto& t : proto.tensor_values()) out.push_back(detail::tensor_from_proto(t, "'" + path + "'"));
  return out;
}

}  // namespace recur::onnx
