#pragma once
// Builds small ONNX models in code with the library's protobuf classes, for the importer's
// tests (and its documentation's example).
#include <cstdint>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/core/tensor.hpp>

namespace recur::testing {

::onnx::AttributeProto int_attribute(const std::string& name, std::int64_t value);
::onnx::AttributeProto ints_attribute(const std::string& name, const std::vector<std::int64_t>& values);
::onnx::AttributeProto float_attribute(const std::string& name, float value);
::onnx::AttributeProto graph_attribute(const std::string& name, const ::onnx::GraphProto& graph);
// A TENSOR attribute (a Constant node's `value`, as exporters write index constants).
::onnx::AttributeProto tensor_attribute(const std::string& name, const Tensor& value);

// A float64 or int64 Tensor as a TensorProto named `name`.
::onnx::TensorProto tensor_proto(const std::string& name, const Tensor& t);

class GraphBuilder {
 public:
  explicit GraphBuilder(std::string name) { graph_.set_name(std::move(name)); }
  // A tensor input or output of element type DOUBLE (or `type`) and shape `dims` (-1: a
  // dimension of any size).
  GraphBuilder& input(const std::string& name, const std::vector<std::int64_t>& dims,
                      std::int32_t type = ::onnx::TensorProto::DOUBLE);
  GraphBuilder& output(const std::string& name, const std::vector<std::int64_t>& dims,
                       std::int32_t type = ::onnx::TensorProto::DOUBLE);
  GraphBuilder& initializer(const std::string& name, const Tensor& value);
  GraphBuilder& initializer(const ::onnx::TensorProto& value);
  GraphBuilder& node(const std::string& op_type, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs, const std::vector<::onnx::AttributeProto>& attributes = {});
  const ::onnx::GraphProto& graph() const { return graph_; }

 private:
  ::onnx::GraphProto graph_;
  int nodes_ = 0;
};

// The serialized model of `graph` importing the default domain at `opset`.
std::string model_bytes(const ::onnx::GraphProto& graph, std::int64_t opset);

}  // namespace recur::testing
