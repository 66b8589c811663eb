// Imported If and Loop: values against the same computation with recur's ops, gradients
// to the values their bodies read from the outer graph against finite differences.
#include <gtest/gtest.h>

#include <limits>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

using ::onnx::TensorProto;

// y = cond ? x * W : tanh(x) - W, both branches reading x and W from the outer graph.
std::string if_model() {
  GraphBuilder then_branch("then"), else_branch("else");
  then_branch.output("t", {3}).node("Mul", {"x", "W"}, {"t"});
  else_branch.output("e", {3}).node("Tanh", {"x"}, {"tx"}).node("Sub", {"tx", "W"}, {"e"});
  GraphBuilder g("if");
  g.input("cond", {}, TensorProto::BOOL).input("x", {3}).input("W", {3}).output("y", {3});
  g.node("If", {"cond"}, {"y"},
         {graph_attribute("then_branch", then_branch.graph()), graph_attribute("else_branch", else_branch.graph())});
  return model_bytes(g.graph(), 13);
}

TEST(OnnxIf, BranchesAndTheirGradients) {
  const auto model = onnx::load_from_bytes(if_model());
  const Tensor x = random_tensor({3}, 1), W = random_tensor({3}, 2);
  for (const std::int64_t cond : {0, 1}) {
    {
      Tape tape;
      const Tensor y = model.run({{"cond", int64_scalar(cond)}, {"x", x}, {"W", W}}).at("y").value();
      expect_near(y, cond ? mul(x, W) : sub(tanh(x), W));
    }
    const auto f = [&](std::span<const Var> v) {
      return model.run({{"cond", int64_scalar(cond)}, {"x", v[0]}, {"W", v[1]}}).at("y");
    };
    const auto report = check_gradients(f, {x, W});
    EXPECT_TRUE(report.ok) << "cond " << cond << ": " << report.failure;
  }
}

// h' = tanh(h W + x) while iteration < 2 (so three iterations; M = INT64_MAX, as exporters
// write for "no limit"), every h'
// also a scan output; W and x are read from the outer graph.
std::string loop_model() {
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL).input("h", {2});
  body.output("cond_out", {}, TensorProto::BOOL).output("h_next", {2}).output("y", {2});
  body.initializer("two", int64_scalar(2));
  body.node("MatMul", {"h", "W"}, {"m"})
      .node("Add", {"m", "x"}, {"a"})
      .node("Tanh", {"a"}, {"h_next"})
      .node("Identity", {"h_next"}, {"y"})
      .node("Less", {"i", "two"}, {"cond_out"});
  GraphBuilder g("loop");
  g.input("h0", {2}).input("W", {2, 2}).input("x", {2}).output("hT", {2}).output("ys", {3, 2});
  Tensor no_limit = Tensor::empty({}, DType::int64);
  no_limit.data<std::int64_t>()[0] = std::numeric_limits<std::int64_t>::max();
  g.initializer("M", no_limit).initializer("go", full({}, 1.0, DType::int64));
  g.node("Loop", {"M", "go", "h0"}, {"hT", "ys"}, {graph_attribute("body", body.graph())});
  return model_bytes(g.graph(), 13);
}

TEST(OnnxLoop, RunsUntilCondAndGradientsReachOuterValues) {
  const std::string bytes = loop_model();
  // `go` is a BOOL in ONNX: rebuild it as one (the builder writes int64 initializers).
  ::onnx::ModelProto proto;
  ASSERT_TRUE(proto.ParseFromString(bytes));
  auto* go = proto.mutable_graph()->mutable_initializer(1);
  go->clear_int64_data();
  go->set_data_type(TensorProto::BOOL);
  go->add_int32_data(1);
  const auto model = onnx::load_from_bytes(proto.SerializeAsString());
  const Tensor h0 = random_tensor({2}, 3), W = random_tensor({2, 2}, 4), x = random_tensor({2}, 5);
  {
    Tape tape;
    const auto out = model.run({{"h0", h0}, {"W", W}, {"x", x}});
    Tensor h = h0;
    std::vector<Tensor> ys;
    for (int i = 0; i < 3; ++i) {
      h = tanh(add(matmul(h, W), x));
      ys.push_back(h);
    }
    expect_near(out.at("hT").value(), h);
    expect_near(out.at("ys").value(), stack(ys, 0));
  }
  for (const char* output : {"hT", "ys"}) {
    const auto f = [&](std::span<const Var> v) { return model.run({{"h0", v[0]}, {"W", v[1]}, {"x", v[2]}}).at(output); };
    const auto report = check_gradients(f, {h0, W, x});
    EXPECT_TRUE(report.ok) << output << ": " << report.failure;
  }
}

}  // namespace
}  // namespace recur::testing
