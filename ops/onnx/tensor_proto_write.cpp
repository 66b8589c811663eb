// Writing a Tensor's values into a TensorProto (tensor_proto_detail.hpp), for saving an
// imported model with its trained initializers.
#include <bit>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>

#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

using ::onnx::TensorProto;

static_assert(std::endian::native == std::endian::little, "ONNX's raw_data is little-endian");

template <class Stored, class Source>
bool fits(Source v) {
  if constexpr (std::is_same_v<Stored, bool>) return v == 0 || v == 1;
  else if constexpr (std::is_integral_v<Stored>) return std::in_range<Stored>(v);
  else return true;
}

// The values of `t` (dtype Source) as little-endian Stored values; ValueError for an
// integer Stored cannot hold.
template <class Stored, class Source>
std::string raw_bytes(const Tensor& t, std::string_view where) {
  const Source* values = t.data<Source>();
  std::string bytes(static_cast<std::size_t>(t.numel()) * sizeof(Stored), '\0');
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    const Source v = values[i];
    if (!fits<Stored>(v))
      fail<ValueError>("onnx_io::save", where, ": the value ", v, " does not fit the initializer's element type");
    const auto stored = static_cast<Stored>(v);
    std::memcpy(bytes.data() + static_cast<std::size_t>(i) * sizeof(Stored), &stored, sizeof(Stored));
  }
  return bytes;
}

std::string raw_bytes_of(std::int32_t element_type, const Tensor& t, std::string_view where) {
  switch (element_type) {
    case TensorProto::FLOAT: return raw_bytes<float, float>(t, where);
    case TensorProto::DOUBLE: return raw_bytes<double, double>(t, where);
    case TensorProto::INT64: return raw_bytes<std::int64_t, std::int64_t>(t, where);
    case TensorProto::INT32: return raw_bytes<std::int32_t, std::int64_t>(t, where);
    case TensorProto::INT16: return raw_bytes<std::int16_t, std::int64_t>(t, where);
    case TensorProto::INT8: return raw_bytes<std::int8_t, std::int64_t>(t, where);
    case TensorProto::UINT32: return raw_bytes<std::uint32_t, std::int64_t>(t, where);
    case TensorProto::UINT16: return raw_bytes<std::uint16_t, std::int64_t>(t, where);
    case TensorProto::UINT8: return raw_bytes<std::uint8_t, std::int64_t>(t, where);
    default: return raw_bytes<bool, std::int64_t>(t, where);  // BOOL: dtype_of_element_type admits no other
  }
}

}  // namespace

void assign_to_proto(TensorProto& proto, const Tensor& t, std::string_view where) {
  const DType dtype = dtype_of_element_type(proto.data_type(), where);
  const Shape shape(proto.dims().begin(), proto.dims().end());
  if (t.dtype() != dtype || t.shape() != shape)
    fail<ValueError>("onnx_io::save", where, ": a ", t.dtype(), " value of shape ", to_string(t.shape()),
                     " for an initializer of ", dtype, " and shape ", to_string(shape));
  std::string bytes = raw_bytes_of(proto.data_type(), t, where);
  // Only raw_data holds the values now: the typed fields would be read instead of it.
  proto.clear_float_data();
  proto.clear_double_data();
  proto.clear_int32_data();
  proto.clear_int64_data();
  proto.clear_uint64_data();
  proto.set_raw_data(std::move(bytes));
}

}  // namespace recur::onnx_io::detail
