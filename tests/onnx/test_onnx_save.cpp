// recur::onnx_io::save of an imported model (model.hpp): every initializer, in body graphs
// too, written with its parameter's current value in its own element type; the written file
// passes onnx::checker and, loaded again, gives the trained model's outputs (not the
// untrained ones); an integer parameter its element type cannot hold, and an unwritable
// path, are clean errors.
#include <gtest/gtest.h>

#include <onnx/checker.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"
#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

using ::onnx::TensorProto;

// y = 2 * sum_t h_t with h' = tanh(h W + x_t + V): W an outer initializer the Scan body
// reads, V an initializer of the body itself, the 2 an INT8 initializer cast to double.
std::string scan_model_with_initializers() {
  GraphBuilder body("step");
  body.input("h", {3}).input("x_t", {3}).output("h_next", {3}).output("y_t", {3});
  body.initializer("V", random_tensor({3}, 11));
  body.node("MatMul", {"h", "W"}, {"m"})
      .node("Add", {"m", "x_t"}, {"a"})
      .node("Add", {"a", "V"}, {"b"})
      .node("Tanh", {"b"}, {"h_next"})
      .node("Identity", {"h_next"}, {"y_t"});
  TensorProto scale;
  scale.set_name("scale");
  scale.set_data_type(TensorProto::INT8);
  scale.add_dims(1);
  scale.add_int32_data(2);
  GraphBuilder g("scan_with_initializers");
  g.input("h0", {3}).input("xs", {4, 3}).output("y", {3});
  g.initializer("W", random_tensor({3, 3}, 12)).initializer("axes", int64_tensor({0})).initializer(scale);
  g.node("Scan", {"h0", "xs"}, {"hT", "ys"}, {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)})
      .node("ReduceSum", {"ys", "axes"}, {"total"}, {int_attribute("keepdims", 0)})
      .node("Cast", {"scale"}, {"scale_d"}, {int_attribute("to", TensorProto::DOUBLE)})
      .node("Mul", {"total", "scale_d"}, {"y"});
  return model_bytes(g.graph(), 13);
}

Tensor output_of(const onnx_io::Model& model, const Tensor& h0, const Tensor& xs) {
  Tape tape;
  return model.run({{"h0", h0}, {"xs", xs}}).at("y").value();
}

class OnnxSave : public TempDirTest {};

TEST_F(OnnxSave, WritesTheTrainedInitializersAndLoadsBackToTheTrainedOutputs) {
  const onnx_io::Model model = onnx_io::load_from_bytes(scan_model_with_initializers(), "scan");
  const Tensor h0 = random_tensor({3}, 1), xs = random_tensor({4, 3}, 2);
  const Tensor untrained = output_of(model, h0, xs);

  // One SGD step on the floating-point initializers (W outside the Scan, V inside it).
  optim::SGD sgd({{"W", model.parameter("W")}, {"V", model.parameter("V")}}, {.lr = 0.3});
  {
    Tape tape;
    tape.backward(sum(model.run({{"h0", h0}, {"xs", xs}}).at("y")));
  }
  sgd.step();
  const Tensor trained = output_of(model, h0, xs);
  ASSERT_GT(max(abs(trained - untrained)).item(), 1e-3) << "the step did not change the model";

  const auto path = file("trained.onnx");
  onnx_io::save(path, model);
  EXPECT_NO_THROW(::onnx::checker::check_model(path.string()));
  const onnx_io::Model reloaded = onnx_io::load(path.string());
  expect_near(output_of(reloaded, h0, xs), trained, 0.0);
  for (const char* name : {"W", "V", "axes", "scale"})
    expect_near(reloaded.parameter(name).value(), model.parameter(name).value(), 0.0);

  // The graph is the loaded one; each initializer keeps its element type.
  const ::onnx::ModelProto proto = model.trained_proto();
  EXPECT_EQ(proto.graph().node_size(), 4);
  EXPECT_EQ(proto.graph().initializer(2).data_type(), TensorProto::INT8);
  EXPECT_EQ(proto.graph().initializer(0).data_type(), TensorProto::DOUBLE);
  EXPECT_EQ(proto.graph().initializer(0).double_data_size(), 0) << "the old values were left beside the new ones";
}

TEST_F(OnnxSave, Float32InitializersRoundTripExactly) {
  GraphBuilder g("f32");
  g.input("x", {2, 3}, TensorProto::FLOAT).output("y", {2, 4}, TensorProto::FLOAT);
  TensorProto w;
  w.set_name("W");
  w.set_data_type(TensorProto::FLOAT);
  w.add_dims(3);
  w.add_dims(4);
  for (int i = 0; i < 12; ++i) w.add_float_data(0.1f * static_cast<float>(i) - 0.5f);
  g.initializer(w).node("MatMul", {"x", "W"}, {"y"});
  const onnx_io::Model model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  Generator gen(3);
  Shared trained_w = model.parameter("W");
  trained_w.assign(normal({3, 4}, 0.0, 1.0, gen, DType::float32));
  onnx_io::save(file("f32.onnx"), model);
  const onnx_io::Model reloaded = onnx_io::load(file("f32.onnx").string());
  EXPECT_EQ(reloaded.parameter("W").value().dtype(), DType::float32);
  expect_near(reloaded.parameter("W").value(), model.parameter("W").value(), 0.0);
}

TEST_F(OnnxSave, IntegerParameterBeyondItsElementTypeIsAValueError) {
  const onnx_io::Model model = onnx_io::load_from_bytes(scan_model_with_initializers(), "scan");
  Shared scale = model.parameter("scale");
  scale.assign(full({1}, 300.0, DType::int64));
  expect_error<ValueError>([&] { onnx_io::save(file("bad.onnx"), model); }, {"scale", "300", "element type"});
  EXPECT_FALSE(std::filesystem::exists(file("bad.onnx")));
}

TEST_F(OnnxSave, UnwritablePathIsAnIOError) {
  const onnx_io::Model model = onnx_io::load_from_bytes(scan_model_with_initializers(), "scan");
  expect_error<IOError>([&] { onnx_io::save(file("no_such_dir") / "m.onnx", model); }, {"no_such_dir"});
}

}  // namespace
}  // namespace recur::testing
