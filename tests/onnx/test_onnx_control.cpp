// Imported If and Loop: values against the same computation with recur's ops, gradients
// to the values their bodies read from the outer graph against finite differences.
#include <gtest/gtest.h>

#include <functional>
#include <limits>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "expect_error.hpp"
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
  const auto model = onnx_io::load_from_bytes(if_model());
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
  const auto model = onnx_io::load_from_bytes(proto.SerializeAsString());
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

// ---- Loop on the scan engine: the run's truncation and recomputation ----------------------

// h' = tanh(h W + x) for M iterations (M an input), h' also a scan output; W and x are read
// from the outer graph. With `last_only`, the graph gives ys[-1] (a Gather) instead of ys.
std::string trip_count_loop_model(bool last_only = false) {
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL).input("h", {2});
  body.output("cond_out", {}, TensorProto::BOOL).output("h_next", {2}).output("y", {2});
  body.node("MatMul", {"h", "W"}, {"m"})
      .node("Add", {"m", "x"}, {"a"})
      .node("Tanh", {"a"}, {"h_next"})
      .node("Identity", {"h_next"}, {"y"})
      .node("Identity", {"cond_in"}, {"cond_out"});
  GraphBuilder g("loop");
  g.input("M", {}, TensorProto::INT64).input("h0", {2}).input("W", {2, 2}).input("x", {2});
  g.output("hT", {2}).output(last_only ? "last" : "ys", last_only ? std::vector<std::int64_t>{2} : std::vector<std::int64_t>{-1, 2});
  g.node("Loop", {"M", "", "h0"}, {"hT", "ys"}, {graph_attribute("body", body.graph())});
  if (last_only)
    g.node("Constant", {}, {"minus_one"}, {tensor_attribute("value", int64_scalar(-1))})
        .node("Gather", {"ys", "minus_one"}, {"last"});
  return model_bytes(g.graph(), 13);
}

struct LoopGradients {
  Tensor h0, W, x, hT;
};

LoopGradients loop_gradients(const onnx_io::Model& model, std::int64_t trips, const Tensor& h0, const Tensor& W,
                             const Tensor& x, const onnx_io::RunOptions& options) {
  Tape tape;
  const Var vh0 = tape.variable(h0), vW = tape.variable(W), vx = tape.variable(x);
  const auto out = model.run({{"M", int64_scalar(trips)}, {"h0", vh0}, {"W", vW}, {"x", vx}}, options);
  tape.backward(sum(out.at("hT")) + sum(out.at("ys") * out.at("ys")));
  return {vh0.grad(), vW.grad(), vx.grad(), out.at("hT").value()};
}

TEST(OnnxLoop, TruncationReachesTheLastIterationsOnly) {
  const auto model = onnx_io::load_from_bytes(trip_count_loop_model());
  const Tensor h0 = random_tensor({2}, 6), W = random_tensor({2, 2}, 7), x = random_tensor({2}, 8);
  const auto got = loop_gradients(model, 4, h0, W, x, {.truncate_gradient = 2});
  // By hand: the first two iterations as constants, the last two recorded; the loss reads
  // every ys entry, but only the last two carry gradients.
  Tape tape;
  const Var vW = tape.variable(W), vx = tape.variable(x);
  Tensor h = h0;
  std::vector<Tensor> early;
  for (int i = 0; i < 2; ++i) early.push_back(h = tanh(add(matmul(h, W), x)));
  Var v = tape.constant(h), loss = tape.constant(zeros({}, DType::float64));
  for (int i = 0; i < 2; ++i) {
    v = tanh(matmul(v, vW) + vx);
    loss = loss + sum(v * v);
  }
  tape.backward(sum(v) + loss);
  expect_near(got.W, vW.grad());
  expect_near(got.x, vx.grad());
  expect_near(got.h0, zeros({2}, DType::float64));
  expect_near(got.hT, v.value());
}

TEST(OnnxLoop, CheckpointingGivesTheFullGradients) {
  const auto model = onnx_io::load_from_bytes(trip_count_loop_model());
  const Tensor h0 = random_tensor({2}, 9), W = random_tensor({2, 2}, 10), x = random_tensor({2}, 11);
  const auto full_tape = loop_gradients(model, 6, h0, W, x, {});
  for (const Checkpoint& c : {Checkpoint::every_k(2), Checkpoint::auto_sqrt(), Checkpoint::snapshots(2)}) {
    const auto got = loop_gradients(model, 6, h0, W, x, {.checkpoint = c});
    expect_near(got.h0, full_tape.h0, 1e-13);
    expect_near(got.W, full_tape.W, 1e-13);
    expect_near(got.x, full_tape.x, 1e-13);
  }
  // The loop is one scan of the tape's memory report, under the policy asked for.
  Tape tape;
  model.run({{"M", int64_scalar(6)}, {"h0", tape.variable(h0)}, {"W", W}, {"x", x}},
            {.checkpoint = Checkpoint::every_k(2)});
  const auto report = tape.memory_report();
  ASSERT_EQ(report.regions.size(), 1u);
  EXPECT_EQ(report.regions[0].policy, "every_k(2)");
  EXPECT_EQ(report.regions[0].steps, 6);
}

// ys read only at [-1]: the loop keeps its last value (Keep::last), nothing stacked; the
// values and gradients are those of the stacked run.
TEST(OnnxLoop, ScanOutputReadOnlyAtTheLastIterationIsNotStacked) {
  const auto model = onnx_io::load_from_bytes(trip_count_loop_model(true));
  const Tensor h0 = random_tensor({2}, 20), W = random_tensor({2, 2}, 21), x = random_tensor({2}, 22);
  std::vector<Tensor> values, gradients;
  for (const bool keep_last : {true, false}) {
    Tape tape;
    const Var vh0 = tape.variable(h0), vW = tape.variable(W), vx = tape.variable(x);
    const auto out = model.run({{"M", int64_scalar(5)}, {"h0", vh0}, {"W", vW}, {"x", vx}}, {.keep_last = keep_last});
    std::size_t stacked = 0;
    for (const auto& op : tape.memory_report().ops)
      if (op.name == "stack") stacked = op.bytes;
    EXPECT_EQ(stacked, keep_last ? 0 : 5 * 2 * sizeof(double)) << "keep_last " << keep_last;
    tape.backward(sum(out.at("last") * out.at("last")) + sum(out.at("hT")));
    values.push_back(out.at("last").value());
    for (const Var& v : {vh0, vW, vx}) gradients.push_back(v.grad());
  }
  Tensor h = h0;
  for (int i = 0; i < 5; ++i) h = tanh(add(matmul(h, W), x));
  expect_near(values[0], h);
  expect_near(values[0], values[1], 0.0);
  for (std::size_t i = 0; i < 3; ++i) expect_near(gradients[i], gradients[3 + i], 0.0);
}

TEST(OnnxLoop, ZeroIterationsGiveEmptyScanOutputs) {
  const auto model = onnx_io::load_from_bytes(trip_count_loop_model());
  Tape tape;
  const Tensor h0 = random_tensor({2}, 12);
  const auto out = model.run({{"M", int64_scalar(0)}, {"h0", h0}, {"W", random_tensor({2, 2}, 13)}, {"x", h0}});
  expect_near(out.at("hT").value(), h0);
  EXPECT_EQ(out.at("ys").shape(), (Shape{0, 2}));
}

// A data-dependent cond with M = INT64_MAX (no bound): truncation works; the policies that
// plan for the number of iterations ask for a trip count.
TEST(OnnxLoop, ConditionEndedLoopTakesTruncationNotRevolve) {
  const std::string bytes = loop_model();
  const auto model = onnx_io::load_from_bytes(bytes);
  const Tensor h0 = random_tensor({2}, 3), W = random_tensor({2, 2}, 4), x = random_tensor({2}, 5);
  Tape tape;
  const Var vh0 = tape.variable(h0), vW = tape.variable(W);
  const auto out = model.run({{"h0", vh0}, {"W", vW}, {"x", x}}, {.truncate_gradient = 1});
  tape.backward(sum(out.at("hT")));
  expect_near(vh0.grad(), zeros({2}, DType::float64));  // three iterations, the last one kept
  EXPECT_GT(sum(abs(vW.grad())).item<double>(), 0.0);
  expect_error<ValueError>([&] { model.run({{"h0", h0}, {"W", W}, {"x", x}}, {.checkpoint = Checkpoint::snapshots(2)}); },
                           {"Loop", "no trip count M", "every_k"});
}

// A carried value that grows each iteration (valid ONNX; the engine's steps keep shapes):
// the loop runs unrolled, and refuses truncation.
TEST(OnnxLoop, CarriedValueThatChangesShapeRunsUnrolled) {
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL).input("acc", {-1});
  body.output("cond_out", {}, TensorProto::BOOL).output("acc_next", {-1});
  body.node("Concat", {"acc", "x"}, {"acc_next"}, {int_attribute("axis", 0)})
      .node("Identity", {"cond_in"}, {"cond_out"});
  GraphBuilder g("growing");
  g.input("M", {}, TensorProto::INT64).input("acc0", {1}).input("x", {1}).output("acc", {-1});
  g.node("Loop", {"M", "", "acc0"}, {"acc"}, {graph_attribute("body", body.graph())});
  const auto model = onnx_io::load_from_bytes(model_bytes(g.graph(), 13));
  Tape tape;
  const Var x = tape.variable(tensor({2.0}, DType::float64));
  const Var acc = model.run({{"M", int64_scalar(3)}, {"acc0", tensor({1.0}, DType::float64)}, {"x", x}}).at("acc");
  EXPECT_EQ(to_vector<double>(acc.value()), (std::vector<double>{1, 2, 2, 2}));
  tape.backward(sum(acc));
  EXPECT_EQ(x.grad().item<double>(), 3.0);
  expect_error<onnx_io::UnsupportedError>(
      [&] { model.run({{"M", int64_scalar(3)}, {"acc0", tensor({1.0}, DType::float64)}, {"x", x}}, {.truncate_gradient = 1}); },
      {"Loop", "changes the shape of a carried value", "unrolled"});
}

// A model whose Loop appends the body's tensor "piece" (made by `piece` from x and the
// iteration i) to a carried sequence M times, then joins the pieces: y.
std::string appending_loop_model(const std::function<void(GraphBuilder&)>& piece, std::int64_t x_size) {
  GraphBuilder body("body");
  body.input("i", {}, TensorProto::INT64).input("cond_in", {}, TensorProto::BOOL);
  body.input("seq_in", {}, TensorProto::DOUBLE).output("cond_out", {}, TensorProto::BOOL).output("seq_out", {});
  piece(body);
  body.node("SequenceInsert", {"seq_in", "piece"}, {"seq_out"}).node("Identity", {"cond_in"}, {"cond_out"});
  GraphBuilder g("appended_pieces");
  g.input("M", {}, TensorProto::INT64).input("x", {x_size}).output("y", {-1});
  g.node("SequenceEmpty", {}, {"empty"}, {int_attribute("dtype", TensorProto::DOUBLE)})
      .node("Loop", {"M", "", "empty"}, {"pieces"}, {graph_attribute("body", body.graph())})
      .node("ConcatFromSequence", {"pieces"}, {"y"}, {int_attribute("axis", 0)});
  auto graph = g.graph();
  for (auto* type : {graph.mutable_node(1)->mutable_attribute(0)->mutable_g()->mutable_input(2)->mutable_type(),
                     graph.mutable_node(1)->mutable_attribute(0)->mutable_g()->mutable_output(1)->mutable_type()}) {
    const auto tensor = type->tensor_type();
    *type->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type() = tensor;
  }
  return model_bytes(graph, 13);
}

// A carried sequence appended tensors of one shape, run without gradients (inference): the
// engine's loop drops each iteration's nodes when it ends, and the shape of the first
// iteration's tensor is still what the next ones are checked against.
TEST(OnnxLoop, SequenceAppendedWithoutGradientsRunsOnTheEngine) {
  const auto model = onnx_io::load_from_bytes(
      appending_loop_model([](GraphBuilder& body) { body.node("Mul", {"x", "x"}, {"piece"}); }, 2));
  Tape tape;
  const Tensor x = tensor({2.0, 3.0}, DType::float64);
  std::vector<double> results[2];
  for (const bool gradients : {true, false}) {
    std::optional<NoGrad> off;
    if (!gradients) off.emplace();
    results[gradients] = to_vector<double>(model.run({{"M", int64_scalar(4)}, {"x", x}}).at("y").value());
  }
  EXPECT_EQ(results[0], (std::vector<double>{4, 9, 4, 9, 4, 9, 4, 9}));
  EXPECT_EQ(results[0], results[1]);
}

// A carried sequence appended x[0 : i + 1] at iteration i (as test_loop13_seq): the tensors
// change shape, so after the engine's attempt the loop runs unrolled, and refuses truncation.
TEST(OnnxLoop, SequenceAppendedTensorsOfChangingShapesRunUnrolled) {
  const auto model = onnx_io::load_from_bytes(appending_loop_model(
      [](GraphBuilder& body) {
        body.initializer("zero", int64_tensor({0})).initializer("one", int64_scalar(1)).initializer("axes", int64_tensor({0}));
        body.node("Add", {"i", "one"}, {"end_scalar"})
            .node("Unsqueeze", {"end_scalar", "axes"}, {"end"})
            .node("Slice", {"x", "zero", "end"}, {"piece"});
      },
      3));
  Tape tape;
  const Var x = tape.variable(tensor({1.0, 2.0, 3.0}, DType::float64));
  const Var y = model.run({{"M", int64_scalar(3)}, {"x", x}}).at("y");
  EXPECT_EQ(to_vector<double>(y.value()), (std::vector<double>{1, 1, 2, 1, 2, 3}));
  // The engine's attempt (two iterations, then a shape change) left nothing on the tape:
  // one slice per unrolled iteration, and no scan.
  const auto report = tape.memory_report();
  EXPECT_TRUE(report.regions.empty());
  std::size_t slices = 0;
  for (const auto& op : report.ops)
    if (op.name == "slice") slices = op.nodes;
  EXPECT_EQ(slices, 3u);
  tape.backward(sum(y));
  EXPECT_EQ(to_vector<double>(x.grad()), (std::vector<double>{3, 2, 1}));
  expect_error<onnx_io::UnsupportedError>([&] { model.run({{"M", int64_scalar(3)}, {"x", x}}, {.truncate_gradient = 1}); },
                                       {"Loop", "appends tensors of changing shapes", "unrolled"});
}

}  // namespace
}  // namespace recur::testing
