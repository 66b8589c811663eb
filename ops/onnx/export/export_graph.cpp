// Graph building for recur's ONNX export (export_graph_detail.hpp).
#include <recur/ops/onnx/export/export_graph_detail.hpp>

#include <onnx/checker.h>
#include <onnx/shape_inference/implementation.h>

#include <recur/core/error.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

void set_type(::onnx::ValueInfoProto& info, const std::string& name, int type, const std::vector<Dim>& dims) {
  info.set_name(name);
  auto* tensor = info.mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(type);
  auto* shape = tensor->mutable_shape();
  for (const Dim& d : dims) {
    auto* dim = shape->add_dim();
    if (const auto* size = std::get_if<std::int64_t>(&d)) {
      dim->set_dim_value(*size);
    } else {
      dim->set_dim_param(std::get<std::string>(d));
    }
  }
}

}  // namespace

int element_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return ::onnx::TensorProto_DataType_FLOAT;
    case DType::float64: return ::onnx::TensorProto_DataType_DOUBLE;
    case DType::int64: return ::onnx::TensorProto_DataType_INT64;
  }
  return ::onnx::TensorProto_DataType_UNDEFINED;
}

void add_initializer(::onnx::GraphProto& graph, const std::string& name, const Tensor& t) {
  write_tensor(*graph.add_initializer(), name, t);
}

void write_tensor(::onnx::TensorProto& proto, const std::string& name, const Tensor& t) {
  proto.set_name(name);
  proto.set_data_type(element_type(t.dtype()));
  for (std::int64_t d : t.shape()) proto.add_dims(d);
  assign_to_proto(proto, t, name);  // the values, as saving an imported model writes them
}

void add_input(::onnx::GraphProto& graph, const std::string& name, int type, const std::vector<Dim>& dims) {
  set_type(*graph.add_input(), name, type, dims);
}

void add_output(::onnx::GraphProto& graph, const std::string& name, int type, const std::vector<Dim>& dims) {
  set_type(*graph.add_output(), name, type, dims);
}

::onnx::NodeProto& add_node(::onnx::GraphProto& graph, const std::string& op_type, const std::vector<std::string>& inputs,
                            const std::vector<std::string>& outputs, const std::string& name) {
  ::onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(op_type);
  node.set_name(name);
  std::size_t used = inputs.size();
  while (used > 0 && inputs[used - 1].empty()) --used;  // trailing omitted inputs are left out
  for (std::size_t i = 0; i < used; ++i) node.add_input(inputs[i]);
  for (const std::string& o : outputs) node.add_output(o);
  return node;
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, std::int64_t value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_INT);
  a->set_i(value);
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::string& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_STRING);
  a->set_s(value);
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::vector<std::int64_t>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_INTS);
  for (std::int64_t v : values) a->add_ints(v);
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, const std::vector<std::string>& values) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_STRINGS);
  for (const std::string& v : values) a->add_strings(v);
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, const Tensor& value) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_TENSOR);
  write_tensor(*a->mutable_t(), "", value);
}

void set_attribute(::onnx::NodeProto& node, const std::string& name, ::onnx::GraphProto graph) {
  auto* a = node.add_attribute();
  a->set_name(name);
  a->set_type(::onnx::AttributeProto_AttributeType_GRAPH);
  *a->mutable_g() = std::move(graph);
}

::onnx::ModelProto checked_model(std::string_view op, ::onnx::GraphProto graph, std::int64_t opset) {
  ::onnx::ModelProto model;
  model.set_ir_version(::onnx::IR_VERSION);
  model.set_producer_name("recur");
  auto* import = model.add_opset_import();
  import->set_domain("");
  import->set_version(opset);
  *model.mutable_graph() = std::move(graph);
  try {
    ::onnx::checker::check_model(model);
    // The checker's full form: strict shape and type inference over a copy, which throws
    // where a node's inferred output disagrees with a declared graph output.
    ::onnx::ModelProto inferred = model;
    ::onnx::shape_inference::InferShapes(inferred, ::onnx::OpSchemaRegistry::Instance(),
                                         ::onnx::ShapeInferenceOptions(true, 1, true));
  } catch (const std::exception& e) {
    fail<ValueError>(op, "the model of graph '", model.graph().name(), "' fails onnx::checker::check_model: ", e.what());
  }
  return model;
}

}  // namespace recur::onnx_io::detail
