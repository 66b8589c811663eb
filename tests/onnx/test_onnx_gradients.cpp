// Gradients through imported models, checked against finite differences in float64 (first
// and second order): every input and every weight of models built from the imported ops.
#include <gtest/gtest.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

using ::onnx::TensorProto;

// check_gradients over the model's inputs `names`, fed `values` in order.
void expect_gradients_match(const onnx_io::Model& model, const std::vector<std::string>& names,
                            const std::vector<Tensor>& values, const std::string& output) {
  const auto f = [&](std::span<const Var> xs) {
    std::map<std::string, Var> feed;
    for (std::size_t i = 0; i < names.size(); ++i) feed.emplace(names[i], xs[i]);
    return model.run(feed).at(output);
  };
  const auto report = check_gradients(f, values);
  EXPECT_TRUE(report.ok) << report.failure;
}

TEST(OnnxGradients, DenseOpsMatchFiniteDifferences) {
  GraphBuilder g("dense");
  g.input("x", {2, 3}).input("W", {3, 4}).input("B", {5, 4}).input("C", {5}).output("y", {4});
  g.initializer("axes", int64_tensor({1}));
  g.node("MatMul", {"x", "W"}, {"h"})
      .node("Tanh", {"h"}, {"t"})
      .node("Gemm", {"t", "B", "C"}, {"g"},
            {int_attribute("transB", 1), float_attribute("alpha", 0.5f), float_attribute("beta", 2.0f)})
      .node("Softmax", {"g"}, {"s"}, {int_attribute("axis", 1)})
      .node("Sigmoid", {"g"}, {"sg"})
      .node("Mul", {"s", "sg"}, {"m"})
      .node("Exp", {"m"}, {"e"})
      .node("Div", {"e", "sg"}, {"d"})
      .node("Concat", {"d", "sg"}, {"c"}, {int_attribute("axis", 0)})
      .node("Softplus", {"c"}, {"sp"})
      .node("ReduceSum", {"sp", "axes"}, {"y"}, {int_attribute("keepdims", 0)});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  expect_gradients_match(model, {"x", "W", "B", "C"},
                         {random_tensor({2, 3}, 1), random_tensor({3, 4}, 2), random_tensor({5, 4}, 3),
                          random_tensor({5}, 4)},
                         "y");
}

TEST(OnnxGradients, ShapeOpsMatchFiniteDifferences) {
  GraphBuilder g("shape");
  g.input("x", {2, 3, 4}).output("y", {24});
  g.initializer("starts", int64_tensor({3}))
      .initializer("ends", int64_tensor({-5}))
      .initializer("axes", int64_tensor({0}))
      .initializer("steps", int64_tensor({-2}))
      .initializer("picks", int64_tensor({1, 0, 1}))
      .initializer("unsq", int64_tensor({0}))
      .initializer("wide", int64_tensor({2, 1, 1, 1}))
      .initializer("flat", int64_tensor({-1}));
  g.node("Transpose", {"x"}, {"xt"}, {ints_attribute("perm", {2, 0, 1})})     // [4, 2, 3]
      .node("Slice", {"xt", "starts", "ends", "axes", "steps"}, {"sl"})       // rows 3, 1: [2, 2, 3]
      .node("Gather", {"sl", "picks"}, {"ga"}, {int_attribute("axis", 2)})    // [2, 2, 3]
      .node("Unsqueeze", {"ga", "unsq"}, {"un"})                              // [1, 2, 2, 3]
      .node("Expand", {"un", "wide"}, {"ex"})                                 // [2, 2, 2, 3]
      .node("Split", {"ex"}, {"a", "b"}, {int_attribute("axis", 1)})          // [2, 1, 2, 3] each
      .node("Abs", {"b"}, {"ab"})
      .node("Greater", {"a", "ab"}, {"gt"})
      .node("Where", {"gt", "a", "ab"}, {"w"})
      .node("Max", {"a", "b"}, {"mx"})
      .node("Min", {"a", "ab"}, {"mn"})
      .node("Mul", {"mx", "mn"}, {"p"})
      .node("Add", {"w", "p"}, {"s"})
      .node("Reshape", {"s", "flat"}, {"y"});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  expect_gradients_match(model, {"x"}, {random_tensor({2, 3, 4}, 5)}, "y");
}

// NegativeLogLikelihoodLoss with class weights, an ignored target and the mean reduction:
// gradients to the scores and to the weights.
TEST(OnnxGradients, NegativeLogLikelihoodLossMatchesFiniteDifferences) {
  GraphBuilder g("nll");
  g.input("x", {3, 4, 2}).input("w", {4}).output("loss", {});
  Tensor target = int64_tensor({0, 3, 2, -1, 1, 3}).view({3, 2});
  g.initializer("target", target);
  ::onnx::AttributeProto ignore = int_attribute("ignore_index", -1);
  g.node("NegativeLogLikelihoodLoss", {"x", "target", "w"}, {"loss"}, {ignore});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  const Tensor x = random_tensor({3, 4, 2}, 6), w = add(random_tensor({4}, 7), full({}, 2.0, DType::float64));
  {
    Tape tape;
    // By hand: -sum(w[t] x[n, t, d]) / sum(w[t]) over the kept (n, d).
    double num = 0, den = 0;
    for (std::int64_t n = 0; n < 3; ++n)
      for (std::int64_t d = 0; d < 2; ++d) {
        const auto t = target.at<std::int64_t>({n, d});
        if (t < 0) continue;
        num -= w.at({t}) * x.at({n, t, d});
        den += w.at({t});
      }
    EXPECT_NEAR(model.run({{"x", x}, {"w", w}}).at("loss").value().item(), num / den, 1e-14);
  }
  expect_gradients_match(model, {"x", "w"}, {x, w}, "loss");
}

// Cast between float and double is differentiable: the gradient is cast back. A float64
// model computing in float32 between two Casts, checked with a step the float32 rounding
// cannot swamp.
TEST(OnnxGradients, CastBetweenFloatAndDoubleIsDifferentiable) {
  GraphBuilder g("cast");
  g.input("x", {2, 3}).input("W", {3, 2}).output("y", {2, 2});
  g.node("Cast", {"x"}, {"x32"}, {int_attribute("to", TensorProto::FLOAT)})
      .node("Cast", {"W"}, {"W32"}, {int_attribute("to", TensorProto::FLOAT)})
      .node("MatMul", {"x32", "W32"}, {"h"})
      .node("Tanh", {"h"}, {"t"})
      .node("Cast", {"t"}, {"y"}, {int_attribute("to", TensorProto::DOUBLE)});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  const Tensor x = random_tensor({2, 3}, 21), W = random_tensor({3, 2}, 22);
  {
    Tape tape;
    const Var vx = tape.variable(x), vW = tape.variable(W);
    const Var y = model.run({{"x", vx}, {"W", vW}}).at("y");
    EXPECT_EQ(y.dtype(), DType::float64);
    tape.backward(sum(y));
    EXPECT_EQ(vx.grad().dtype(), DType::float64);
    // By hand, in float32: d sum(tanh(x W))/dx = (1 - tanh^2) W^T.
    const Tensor x32 = x.to(DType::float32), W32 = W.to(DType::float32);
    const Tensor t = tanh(matmul(x32, W32));
    const Tensor dh = sub(full(t.shape(), 1.0, DType::float32), mul(t, t));
    expect_near(vx.grad(), matmul(dh, transpose(W32)).to(DType::float64), 1e-6);
    expect_near(vW.grad(), matmul(transpose(x32), dh).to(DType::float64), 1e-6);
  }
  const auto f = [&](std::span<const Var> v) { return model.run({{"x", v[0]}, {"W", v[1]}}).at("y"); };
  const auto report = check_gradients(f, {x, W}, {.eps = 1e-3, .rtol = 1e-3, .atol = 1e-4});
  EXPECT_TRUE(report.ok) << report.failure;
}

}  // namespace
}  // namespace recur::testing
