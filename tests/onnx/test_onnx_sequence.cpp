// Imported sequence ops: values against the same computation with recur's ops, gradients
// through the tensors a sequence holds against finite differences (float64).
#include <gtest/gtest.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

// x [4, 2] -> its rows as a sequence; tanh(row 1) inserted at the front, the last row
// erased, the rows stacked again and multiplied by x.
std::string sequence_model() {
  GraphBuilder g("sequences");
  g.input("x", {4, 2}).output("y", {4, 2}).output("n", {});
  g.initializer("one", int64_scalar(1)).initializer("front", int64_scalar(0)).initializer("last", int64_scalar(-1));
  g.node("SplitToSequence", {"x"}, {"rows"}, {int_attribute("keepdims", 0)})
      .node("SequenceAt", {"rows", "one"}, {"row1"})
      .node("Tanh", {"row1"}, {"t"})
      .node("SequenceInsert", {"rows", "t", "front"}, {"more"})
      .node("SequenceErase", {"more", "last"}, {"fewer"})
      .node("SequenceLength", {"fewer"}, {"n"})
      .node("ConcatFromSequence", {"fewer"}, {"stacked"}, {int_attribute("axis", 0), int_attribute("new_axis", 1)})
      .node("Mul", {"stacked", "x"}, {"y"});
  // n is an int64 scalar output.
  auto graph = g.graph();
  graph.mutable_output(1)->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::INT64);
  return model_bytes(graph, 13);
}

TEST(OnnxSequence, OpsMatchRecurOpsAndFiniteDifferences) {
  const auto model = onnx_io::load_from_bytes(sequence_model());
  Generator gen(1);
  const Tensor x = normal({4, 2}, 0.0, 1.0, gen, DType::float64);
  {
    Tape tape;
    const auto out = model.run({{"x", x}});
    const Tensor want = mul(stack({tanh(x[1]), x[0], x[1], x[2]}, 0), x);
    const Tensor got = out.at("y").value();
    for (std::int64_t i = 0; i < 8; ++i) EXPECT_NEAR(got.data<double>()[i], want.data<double>()[i], 1e-14);
    EXPECT_EQ(out.at("n").value().item<std::int64_t>(), 4);
  }
  const auto f = [&](std::span<const Var> v) { return model.run({{"x", v[0]}}).at("y"); };
  const auto report = check_gradients(f, {x});
  EXPECT_TRUE(report.ok) << report.failure;
}

}  // namespace
}  // namespace recur::testing
