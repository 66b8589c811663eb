#include "model_builder.hpp"

namespace recur::testing {

::onnx::AttributeProto int_attribute(const std::string& name, std::int64_t value) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INT);
  a.set_i(value);
  return a;
}

::onnx::AttributeProto ints_attribute(const std::string& name, const std::vector<std::int64_t>& values) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::INTS);
  for (auto v : values) a.add_ints(v);
  return a;
}

::onnx::AttributeProto float_attribute(const std::string& name, float value) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::FLOAT);
  a.set_f(value);
  return a;
}

::onnx::AttributeProto graph_attribute(const std::string& name, const ::onnx::GraphProto& graph) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::GRAPH);
  *a.mutable_g() = graph;
  return a;
}

::onnx::AttributeProto tensor_attribute(const std::string& name, const Tensor& value) {
  ::onnx::AttributeProto a;
  a.set_name(name);
  a.set_type(::onnx::AttributeProto::TENSOR);
  *a.mutable_t() = tensor_proto("", value);
  return a;
}

::onnx::TensorProto tensor_proto(const std::string& name, const Tensor& t) {
  ::onnx::TensorProto p;
  p.set_name(name);
  for (auto d : t.shape()) p.add_dims(d);
  if (t.dtype() == DType::int64) {
    p.set_data_type(::onnx::TensorProto::INT64);
    for (std::int64_t i = 0; i < t.numel(); ++i) p.add_int64_data(t.data<std::int64_t>()[i]);
  } else {
    const Tensor d = t.to(DType::float64);
    p.set_data_type(::onnx::TensorProto::DOUBLE);
    for (std::int64_t i = 0; i < d.numel(); ++i) p.add_double_data(d.data<double>()[i]);
  }
  return p;
}

namespace {
void add_value(::google::protobuf::RepeatedPtrField<::onnx::ValueInfoProto>* to, const std::string& name,
               const std::vector<std::int64_t>& dims, std::int32_t type) {
  auto* tensor = to->Add()->mutable_type()->mutable_tensor_type();
  to->rbegin()->set_name(name);
  tensor->set_elem_type(type);
  auto* shape = tensor->mutable_shape();
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] >= 0) shape->add_dim()->set_dim_value(dims[i]);
    else shape->add_dim()->set_dim_param(name + "_" + std::to_string(i));
  }
}
}  // namespace

GraphBuilder& GraphBuilder::input(const std::string& name, const std::vector<std::int64_t>& dims, std::int32_t type) {
  add_value(graph_.mutable_input(), name, dims, type);
  return *this;
}

GraphBuilder& GraphBuilder::output(const std::string& name, const std::vector<std::int64_t>& dims, std::int32_t type) {
  add_value(graph_.mutable_output(), name, dims, type);
  return *this;
}

GraphBuilder& GraphBuilder::initializer(const std::string& name, const Tensor& value) {
  *graph_.add_initializer() = tensor_proto(name, value);
  return *this;
}

GraphBuilder& GraphBuilder::initializer(const ::onnx::TensorProto& value) {
  *graph_.add_initializer() = value;
  return *this;
}

GraphBuilder& GraphBuilder::node(const std::string& op_type, const std::vector<std::string>& inputs,
                                 const std::vector<std::string>& outputs,
                                 const std::vector<::onnx::AttributeProto>& attributes) {
  auto* n = graph_.add_node();
  n->set_op_type(op_type);
  n->set_name(graph_.name() + "/" + op_type + "_" + std::to_string(nodes_++));
  for (const auto& i : inputs) n->add_input(i);
  for (const auto& o : outputs) n->add_output(o);
  for (const auto& a : attributes) *n->add_attribute() = a;
  return *this;
}

std::string model_bytes(const ::onnx::GraphProto& graph, std::int64_t opset) {
  ::onnx::ModelProto m;
  m.set_ir_version(8);
  m.set_producer_name("recur tests");
  auto* o = m.add_opset_import();
  o->set_domain("");
  o->set_version(opset);
  *m.mutable_graph() = graph;
  return m.SerializeAsString();
}

}  // namespace recur::testing
