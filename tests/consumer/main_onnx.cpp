// Checks that an installed recur::onnx links and imports: a model built with the ONNX
// library's classes, y = x * x, loaded from bytes; d/dx sum(y) = 2x.
#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include <onnx/onnx_pb.h>

#include <cmath>
#include <iostream>
#include <string>

int main() {
  ::onnx::ModelProto proto;
  proto.set_ir_version(8);
  proto.add_opset_import()->set_version(13);
  ::onnx::GraphProto& graph = *proto.mutable_graph();
  graph.set_name("square");
  const std::string x = "x", y = "y";
  for (auto* value : {graph.add_input(), graph.add_output()}) {
    value->set_name(value == &graph.input(0) ? x : y);
    auto* type = value->mutable_type()->mutable_tensor_type();
    type->set_elem_type(::onnx::TensorProto::DOUBLE);
    type->mutable_shape()->add_dim()->set_dim_value(3);
  }
  ::onnx::NodeProto& node = *graph.add_node();
  node.set_op_type(std::string("Mul"));
  node.add_input(x);
  node.add_input(x);
  node.add_output(y);

  const recur::onnx_io::Model model = recur::onnx_io::load_from_bytes(proto.SerializeAsString());
  recur::Tape tape;
  recur::Var in = tape.variable(recur::tensor({1.0, 2.0, 3.0}, recur::DType::float64));
  tape.backward(recur::sum(model.run({{x, in}}).at(y)));
  for (int i = 0; i < 3; ++i)
    if (std::abs(in.grad().at({i}) - 2.0 * (i + 1)) > 1e-12) {
      std::cerr << "onnx consumer: wrong gradient at " << i << "\n";
      return 1;
    }
  std::cout << "consumer: recur::onnx imports a model, gradient of sum(x*x) is 2x\n";
  return 0;
}
