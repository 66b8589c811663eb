#pragma once
// Internal to recur's ONNX export (ops/onnx/export/): building a graph with the ONNX
// library's protobuf classes, a node, an initializer or a graph input or output at a time.
#include <cstdint>
#include <string>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/core/tensor.hpp>

namespace recur::onnx_io::detail {

// ONNX's element type of a recur dtype (float32, float64, int64).
int element_type(DType dtype);

// A dimension of a graph input or output: fixed, or named ("T", "B") for any size.
using Dim = std::variant<std::int64_t, std::string>;

// `t` as a named initializer of `graph`.
void add_initializer(::onnx::GraphProto& graph, const std::string& name, const Tensor& t);
// `t` written into `proto` (type, dimensions, values), named `name`.
void write_tensor(::onnx::TensorProto& proto, const std::string& name, const Tensor& t);
// A graph input or output of element type `type` and the given dimensions.
void add_input(::onnx::GraphProto& graph, const std::string& name, int type, const std::vector<Dim>& dims);
void add_output(::onnx::GraphProto& graph, const std::string& name, int type, const std::vector<Dim>& dims);

// A node of the default domain; an empty input name is an omitted optional input.
::onnx::NodeProto& add_node(::onnx::GraphProto& graph, const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, const std::string& name);
void set_attribute(::onnx::NodeProto& node, const std::string& name, std::int64_t value);
void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::string& value);
void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values);
void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values);
void set_attribute(::onnx::NodeProto& node, const std::string& name, const Tensor& value);  // a Constant's value
void set_attribute(::onnx::NodeProto& node, const std::string& name, ::onnx::GraphProto graph);  // a body

// A model of `graph` for the default domain at `opset`, checked by onnx::checker and by
// ONNX's strict shape inference (ValueError naming `op` and the library's message when
// either fails).
::onnx::ModelProto checked_model(std::string_view op, ::onnx::GraphProto graph, std::int64_t opset);

}  // namespace recur::onnx_io::detail
