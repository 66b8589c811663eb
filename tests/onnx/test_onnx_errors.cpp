// Bad models and bad feeds: each a recur::Error naming the model, the node and what is
// wrong; nothing is loaded, and a failed run leaves the tape as it was.
#include <gtest/gtest.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "../expect_error.hpp"
#include "model_builder.hpp"

namespace recur::testing {
namespace {

std::string tanh_model(const std::string& op = "Tanh") {
  GraphBuilder g("g");
  g.input("x", {2}).output("y", {2});
  g.node(op, {"x"}, {"y"});
  return model_bytes(g.graph(), 13);
}

TEST(OnnxErrors, MissingFile) {
  expect_error<IOError>([] { onnx_io::load("no/such/model.onnx"); }, {"onnx_io::load", "no/such/model.onnx"});
}

TEST(OnnxErrors, CorruptBytes) {
  const std::string bytes = tanh_model();
  expect_error<IOError>([&] { onnx_io::load_from_bytes(bytes.substr(0, bytes.size() - 3), "cut.onnx"); },
                        {"cut.onnx", "truncated or corrupt"});
}

TEST(OnnxErrors, CheckerRejectsAnUnsortedGraph) {
  GraphBuilder g("g");
  g.input("x", {2}).output("y", {2});
  g.node("Tanh", {"t"}, {"y"}).node("Tanh", {"x"}, {"t"});
  expect_error<ValueError>([&] { onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx"); },
                           {"m.onnx", "ONNX checker"});
}

TEST(OnnxErrors, UnsupportedOpNamesTheNode) {
  expect_error<onnx_io::UnsupportedError>([] { onnx_io::load_from_bytes(tanh_model("Cos"), "m.onnx"); },
                                       {"m.onnx", "node 'g/Cos_0'", "Cos", "opset 13"});
  EXPECT_FALSE(std::ranges::count(onnx_io::imported_op_types(), "Cos"));
}

TEST(OnnxErrors, UnsupportedElementTypeOfAnInitializer) {
  GraphBuilder g("g");
  g.input("x", {2}).output("y", {2});
  ::onnx::TensorProto half;
  half.set_name("h");
  half.set_data_type(::onnx::TensorProto::FLOAT16);
  half.add_dims(2);
  half.add_int32_data(0);
  half.add_int32_data(0);
  g.initializer(half);
  g.node("Add", {"x", "h"}, {"y"});
  expect_error<onnx_io::UnsupportedError>([&] { onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx"); },
                                       {"m.onnx", "initializer 'h'", "FLOAT16"});
}

TEST(OnnxErrors, FeedsAreCheckedBeforeRecording) {
  const auto model = onnx_io::load_from_bytes(tanh_model(), "m.onnx");
  Tape tape;
  const Var x = tape.constant(ones({2}, DType::float64));
  const Var wrong_shape = tape.constant(ones({3}, DType::float64));
  const Var wrong_type = tape.constant(ones({2}, DType::float32));
  expect_clean_failure<ValueError>(tape, [&] { model.run({}); }, {"m.onnx", "input 'x' is not fed"});
  expect_clean_failure<ValueError>(tape, [&] { model.run({{"x", x}, {"z", x}}); }, {"m.onnx", "no input 'z'"});
  expect_clean_failure<ValueError>(tape, [&] { model.run({{"x", wrong_shape}}); }, {"input 'x'", "[3]"});
  expect_clean_failure<ValueError>(tape, [&] { model.run({{"x", wrong_type}}); }, {"input 'x'", "float32"});
}

// A node that fails while running (here a Reshape to an impossible shape) drops what the
// run had recorded.
TEST(OnnxErrors, FailedRunLeavesTheTapeUnchanged) {
  GraphBuilder g("g");
  g.input("x", {2}).output("y", {4});
  g.initializer("shape", [] {
    Tensor t = Tensor::empty({1}, DType::int64);
    t.data<std::int64_t>()[0] = 4;
    return t;
  }());
  g.node("Tanh", {"x"}, {"t"}).node("Reshape", {"t", "shape"}, {"y"});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13), "m.onnx");
  Tape tape;
  const Var x = tape.constant(ones({2}, DType::float64));
  expect_clean_failure<ShapeError>(tape, [&] { model.run({{"x", x}}); }, {"reshape"});
}

TEST(OnnxErrors, UnknownParameter) {
  const auto model = onnx_io::load_from_bytes(tanh_model(), "m.onnx");
  expect_error<ValueError>([&] { model.parameter("W"); }, {"m.onnx", "no initializer 'W'"});
}

}  // namespace
}  // namespace recur::testing
