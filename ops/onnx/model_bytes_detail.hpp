#pragma once
// A model's bytes before anything else looks at them: read from a regular file, parsed,
// and refused if any tensor keeps its values elsewhere. These run before the ONNX checker,
// which would open the external files it names (and so tell a model whether a path exists).
#include <string>
#include <string_view>

#include <onnx/onnx_pb.h>

namespace recur::onnx_io::detail {

// The bytes of the regular file `path` (a serialized protobuf message); IOError naming `op`
// and the path when it is missing, not a regular file (a directory), unreadable, empty or
// larger than protobuf parses.
std::string read_proto_file(const std::string& path, std::string_view op);

// The ModelProto serialized in `bytes`; IOError naming `origin` when the bytes are empty,
// nest messages deeper than protobuf parses (100 levels), or are truncated or corrupt.
::onnx::ModelProto parse_model(std::string_view bytes, std::string_view origin);

// UnsupportedError if any TensorProto anywhere in `proto` (initializers, Constant
// attributes, body graphs, functions, training info) stores its data externally. The
// message is the same whatever path the model names, and no file is touched.
void refuse_external_data(const ::onnx::ModelProto& proto, std::string_view origin);

}  // namespace recur::onnx_io::detail
