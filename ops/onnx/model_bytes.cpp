#include <recur/ops/onnx/model_bytes_detail.hpp>

#include <vector>

#include <google/protobuf/io/coded_stream.h>

#include <recur/core/file_io.hpp>
#include <recur/ops/onnx/error.hpp>

namespace recur::onnx_io::detail {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::Message;

// Protobuf's own default: deeper nesting fails to parse.
constexpr int kProtobufNesting = 100;
// Deep enough to tell "nested too deeply" from "corrupt" for any model a tool would write,
// shallow enough for the stack (protobuf parses nested messages recursively).
constexpr int kDiagnosisNesting = 1000;

bool parses(std::string_view bytes, int nesting, ::onnx::ModelProto& proto) {
  google::protobuf::io::CodedInputStream in(reinterpret_cast<const std::uint8_t*>(bytes.data()),
                                            static_cast<int>(bytes.size()));
  in.SetRecursionLimit(nesting);
  return proto.ParseFromCodedStream(&in) && in.ConsumedEntireMessage();
}

bool stores_externally(const ::onnx::TensorProto& t) {
  return t.data_location() == ::onnx::TensorProto::EXTERNAL || t.external_data_size() > 0;
}

// Every TensorProto inside `m`, found through reflection so that no place that can hold one
// (now or in a later ONNX version) is missed. Depth is bounded by the parse's nesting limit.
template <class Visit>
void for_each_tensor(const Message& m, Visit&& visit) {
  if (m.GetDescriptor() == ::onnx::TensorProto::descriptor()) visit(static_cast<const ::onnx::TensorProto&>(m));
  const auto* reflection = m.GetReflection();
  std::vector<const FieldDescriptor*> fields;
  reflection->ListFields(m, &fields);
  for (const auto* f : fields) {
    if (f->cpp_type() != FieldDescriptor::CPPTYPE_MESSAGE) continue;
    if (!f->is_repeated()) {
      for_each_tensor(reflection->GetMessage(m, f), visit);
      continue;
    }
    for (int i = 0; i < reflection->FieldSize(m, f); ++i) for_each_tensor(reflection->GetRepeatedMessage(m, f, i), visit);
  }
}

}  // namespace

std::string read_proto_file(const std::string& path, std::string_view op) {
  auto file = ::recur::detail::open_input(path, op);  // IOError unless a regular file
  if (file.size == 0) fail<IOError>(op, "'", path, "' is empty (0 bytes)");
  if (file.size > static_cast<std::uint64_t>(INT32_MAX))
    fail<IOError>(op, "'", path, "' has ", file.size, " bytes, more than protobuf parses (2 GiB)");
  std::string bytes;
  try {
    bytes.resize(static_cast<std::size_t>(file.size));
  } catch (const std::bad_alloc&) {
    fail<MemoryError>(op, "'", path, "': cannot hold its ", file.size, " bytes");
  }
  if (!file.stream.read(bytes.data(), static_cast<std::streamsize>(bytes.size())))
    fail<IOError>(op, "cannot read '", path, "'");
  return bytes;
}

::onnx::ModelProto parse_model(std::string_view bytes, std::string_view origin) {
  if (bytes.empty()) fail<IOError>("onnx_io::load", origin, ": the model is empty (0 bytes)");
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX))
    fail<IOError>("onnx_io::load", origin, ": ", bytes.size(), " bytes is more than protobuf parses (2 GiB)");
  ::onnx::ModelProto proto;
  if (parses(bytes, kProtobufNesting, proto)) return proto;
  ::onnx::ModelProto deeper;
  if (parses(bytes, kDiagnosisNesting, deeper))
    fail<IOError>("onnx_io::load", origin, ": the model nests messages deeper than protobuf's limit of ", kProtobufNesting,
                  " levels (body graphs inside body graphs)");
  fail<IOError>("onnx_io::load", origin, ": not a serialized ONNX ModelProto (truncated or corrupt)");
}

void refuse_external_data(const ::onnx::ModelProto& proto, std::string_view origin) {
  for_each_tensor(proto, [&](const ::onnx::TensorProto& t) {
    if (stores_externally(t))
      throw UnsupportedError(::recur::detail::concat("recur::onnx_io::load: ", origin, ": tensor '", t.name(),
                                                     "' keeps its values in an external file; recur reads no "
                                                     "external data (save the model with its data inside)"));
  });
}

}  // namespace recur::onnx_io::detail
