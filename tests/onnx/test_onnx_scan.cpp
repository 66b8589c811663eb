// Imported Scan (opsets 8, 9, 11, 16) on recur's scan engine: values against a loop written
// with recur's ops, gradients against finite differences (float64, first and second order),
// including to an outer-scope value the body reads, and to an initializer as a parameter.
#include <gtest/gtest.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

// The Elman step h' = tanh(h W + x_t), W read from the outer graph; outputs h' and y_t = h'.
::onnx::GraphProto elman_body() {
  GraphBuilder body("step");
  body.input("h", {3}).input("x_t", {3}).output("h_next", {3}).output("y_t", {3});
  body.node("MatMul", {"h", "W"}, {"m"})
      .node("Add", {"m", "x_t"}, {"a"})
      .node("Tanh", {"a"}, {"h_next"})
      .node("Identity", {"h_next"}, {"y_t"});
  return body.graph();
}

// Outer graph: Scan over xs (shape `xs_dims`) from h0 (shape `h0_dims`), W an input (or an
// initializer holding `w_init`, when given).
std::string elman_model(std::int64_t opset, const std::vector<std::int64_t>& h0_dims,
                        const std::vector<std::int64_t>& xs_dims, std::initializer_list<::onnx::AttributeProto> extra,
                        const Tensor& w_init = Tensor()) {
  GraphBuilder g("elman");
  g.input("h0", h0_dims).input("xs", xs_dims);
  if (w_init.defined()) g.initializer("W", w_init);
  else g.input("W", {3, 3});
  g.output("hT", h0_dims).output("ys", xs_dims);
  std::vector<::onnx::AttributeProto> attributes{graph_attribute("body", elman_body()), int_attribute("num_scan_inputs", 1)};
  attributes.insert(attributes.end(), extra.begin(), extra.end());
  const std::vector<std::string> inputs = opset == 8 ? std::vector<std::string>{"", "h0", "xs"} : std::vector<std::string>{"h0", "xs"};
  g.node("Scan", inputs, {"hT", "ys"}, attributes);
  return model_bytes(g.graph(), opset);
}

// The same loop written with recur's ops: final state and the stacked outputs.
std::pair<Tensor, Tensor> elman_loop(const Tensor& h0, const Tensor& xs, const Tensor& W) {
  Tensor h = h0;
  std::vector<Tensor> ys;
  for (std::int64_t t = 0; t < xs.size(0); ++t) {
    h = tanh(add(matmul(h, W), xs[t]));
    ys.push_back(h);
  }
  return {h, stack(ys, 0)};
}

void expect_gradients_match(const onnx_io::Model& model, const std::vector<Tensor>& values, const char* output) {
  const auto f = [&](std::span<const Var> xs) { return model.run({{"h0", xs[0]}, {"xs", xs[1]}, {"W", xs[2]}}).at(output); };
  const auto report = check_gradients(f, values);
  EXPECT_TRUE(report.ok) << output << ": " << report.failure;
}

class OnnxScanOpset : public ::testing::TestWithParam<std::int64_t> {};

TEST_P(OnnxScanOpset, ElmanLoopMatchesRecurOpsAndFiniteDifferences) {
  const auto model = onnx_io::load_from_bytes(elman_model(GetParam(), {3}, {4, 3}, {}));
  const Tensor h0 = random_tensor({3}, 1), xs = random_tensor({4, 3}, 2), W = random_tensor({3, 3}, 3);
  Tape tape;
  const auto out = model.run({{"h0", h0}, {"xs", xs}, {"W", W}});
  const auto [hT, ys] = elman_loop(h0, xs, W);
  expect_near(out.at("hT").value(), hT);
  expect_near(out.at("ys").value(), ys);
  expect_gradients_match(model, {h0, xs, W}, "hT");
  expect_gradients_match(model, {h0, xs, W}, "ys");
}

// 19, 21 and 23 changed only the element types Scan accepts: the same loop runs.
INSTANTIATE_TEST_SUITE_P(Opsets, OnnxScanOpset, ::testing::Values(9, 11, 16, 19, 21, 23));

// Element types recur does not hold (here float16; the bfloat16 and float8 types Scan 19
// to 23 admit likewise) are refused when the model loads, naming the input.
TEST(OnnxScan, UnsupportedElementTypeIsRefusedAtLoad) {
  GraphBuilder body("step");
  body.input("h", {2}, ::onnx::TensorProto::FLOAT16).input("x", {2}, ::onnx::TensorProto::FLOAT16);
  body.output("hn", {2}, ::onnx::TensorProto::FLOAT16).output("y", {2}, ::onnx::TensorProto::FLOAT16);
  body.node("Add", {"h", "x"}, {"hn"}).node("Identity", {"hn"}, {"y"});
  GraphBuilder g("g");
  g.input("h0", {2}, ::onnx::TensorProto::FLOAT16).input("xs", {3, 2}, ::onnx::TensorProto::FLOAT16);
  g.output("hT", {2}, ::onnx::TensorProto::FLOAT16).output("ys", {3, 2}, ::onnx::TensorProto::FLOAT16);
  g.node("Scan", {"h0", "xs"}, {"hT", "ys"}, {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)});
  try {
    onnx_io::load_from_bytes(model_bytes(g.graph(), 23), "half.onnx");
    ADD_FAILURE() << "a float16 Scan loaded";
  } catch (const onnx_io::UnsupportedError& e) {
    EXPECT_NE(std::string(e.what()).find("FLOAT16"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'h0'"), std::string::npos) << e.what();
  }
}

// Scan inputs along axis 1 taken in reverse; the scan output stacked along axis 1, prepended.
TEST(OnnxScan, AxesAndDirections) {
  const auto model = onnx_io::load_from_bytes(
      elman_model(16, {3}, {3, 4},
                  {ints_attribute("scan_input_axes", {1}), ints_attribute("scan_input_directions", {1}),
                   ints_attribute("scan_output_axes", {1}), ints_attribute("scan_output_directions", {1})}));
  const Tensor h0 = random_tensor({3}, 4), xs = random_tensor({3, 4}, 5), W = random_tensor({3, 3}, 6);
  Tape tape;
  const auto out = model.run({{"h0", h0}, {"xs", xs}, {"W", W}});
  // Reversed in time, then the prepended outputs are back in the input's time order.
  const Tensor xs_reversed = permute(take(xs, tensor({3, 2, 1, 0}, DType::int64), 1), {1, 0});
  const auto [hT, ys] = elman_loop(h0, xs_reversed, W);
  expect_near(out.at("hT").value(), hT);
  expect_near(out.at("ys").value(), permute(take(ys, tensor({3, 2, 1, 0}, DType::int64), 0), {1, 0}));
  expect_gradients_match(model, {h0, xs, W}, "ys");
}

// Opset 8: a batch axis first; each batch entry is its own loop.
TEST(OnnxScan, Opset8BatchAxis) {
  const auto model = onnx_io::load_from_bytes(elman_model(8, {2, 3}, {2, 4, 3}, {}));
  const Tensor h0 = random_tensor({2, 3}, 7), xs = random_tensor({2, 4, 3}, 8), W = random_tensor({3, 3}, 9);
  Tape tape;
  const auto out = model.run({{"h0", h0}, {"xs", xs}, {"W", W}});
  for (std::int64_t b = 0; b < 2; ++b) {
    const auto [hT, ys] = elman_loop(h0[b], xs[b], W);
    expect_near(out.at("hT").value()[b], hT);
    expect_near(out.at("ys").value()[b], ys);
  }
  expect_gradients_match(model, {h0, xs, W}, "ys");
}

// W an initializer: a parameter the body reads from the outer scope; backward accumulates
// into it the gradient that feeding the same values as inputs gives.
TEST(OnnxScan, InitializerReadByTheBodyIsATrainedParameter) {
  const Tensor h0 = random_tensor({3}, 10), xs = random_tensor({4, 3}, 11), W = random_tensor({3, 3}, 12);
  const auto model = onnx_io::load_from_bytes(elman_model(16, {3}, {4, 3}, {}, W));
  ASSERT_EQ(model.parameters().size(), 1u);
  const Shared& param = model.parameter("W");
  {
    Tape tape;
    tape.backward(sum(model.run({{"h0", h0}, {"xs", xs}}).at("ys")));
  }
  const auto fed = onnx_io::load_from_bytes(elman_model(16, {3}, {4, 3}, {}));
  Tape tape;
  const Var w = tape.variable(W);
  const Var g = grad(sum(fed.run({{"h0", h0}, {"xs", xs}, {"W", w}}).at("ys")), w);
  expect_near(param.grad(), g.value());
  EXPECT_GT(std::abs(param.grad().at({0, 0})), 0.0);
}

// ---- Keep::last for scan outputs read only at their last step --------------------------

// The Elman scan with three copies of h' as scan outputs: ys0 read by Gather(-1) (a Constant
// index, as PyTorch writes out[-1]), ys1 by Slice [2:3] then Squeeze, ys2 by Gather(0).
std::string last_read_model() {
  GraphBuilder body("step");
  body.input("h", {3}).input("x_t", {3}).output("h_next", {3}).output("y0", {3}).output("y1", {3}).output("y2", {3});
  body.node("MatMul", {"h", "W"}, {"m"}).node("Add", {"m", "x_t"}, {"a"}).node("Tanh", {"a"}, {"h_next"});
  for (const char* y : {"y0", "y1", "y2"}) body.node("Identity", {"h_next"}, {y});
  GraphBuilder g("last_reads");
  g.input("h0", {3}).input("xs", {-1, 3}).input("W", {3, 3});
  g.output("hT", {3}).output("last", {3}).output("third", {3}).output("first", {3});
  g.initializer("zero", int64_scalar(0)).initializer("start", int64_tensor({2})).initializer("end", int64_tensor({3}));
  g.initializer("axes", int64_tensor({0}));
  g.node("Scan", {"h0", "xs"}, {"hT", "ys0", "ys1", "ys2"},
         {graph_attribute("body", body.graph()), int_attribute("num_scan_inputs", 1)})
      .node("Constant", {}, {"minus_one"}, {tensor_attribute("value", int64_scalar(-1))})
      .node("Gather", {"ys0", "minus_one"}, {"last"})
      .node("Slice", {"ys1", "start", "end", "axes"}, {"ys1_third"})
      .node("Squeeze", {"ys1_third", "axes"}, {"third"})
      .node("Gather", {"ys2", "zero"}, {"first"});
  return model_bytes(g.graph(), 16);
}

struct LastReadRun {
  std::map<std::string, Tensor> values;
  Tensor h0, xs, W;                // gradients of sum(output^2) over the outputs
  std::size_t stacked_bytes = 0;   // the memory report's concat row: the stacked scan outputs (stack = concat)
  bool captured = false;           // the loop ran from its captured step
};

LastReadRun run_last_reads(const onnx_io::Model& model, const Tensor& h0, const Tensor& xs, const Tensor& W,
                           bool keep_last) {
  Tape tape;
  const Var vh0 = tape.variable(h0), vxs = tape.variable(xs), vW = tape.variable(W);
  const auto out = model.run({{"h0", vh0}, {"xs", vxs}, {"W", vW}}, {.keep_last = keep_last});
  LastReadRun r;
  const MemoryReport report = tape.memory_report();
  for (const auto& op : report.ops)
    if (op.name == "stack") r.stacked_bytes = op.bytes;
  for (const auto& region : report.regions) r.captured = r.captured || region.step == "captured";
  Var loss = tape.constant(zeros({}, DType::float64));
  for (const auto& [name, v] : out) {
    r.values[name] = v.value();
    loss = loss + sum(v * v);
  }
  tape.backward(loss);
  r.h0 = vh0.grad(), r.xs = vxs.grad(), r.W = vW.grad();
  return r;
}

TEST(OnnxScan, OutputsReadOnlyAtTheLastStepKeepOneStep) {
  const auto model = onnx_io::load_from_bytes(last_read_model());
  const Tensor h0 = random_tensor({3}, 13), W = random_tensor({3, 3}, 14);
  for (const std::int64_t steps : {3, 4}) {  // with 4 steps the Slice [2:3] is not the last step
    const Tensor xs = random_tensor({steps, 3}, 15);
    const auto kept = run_last_reads(model, h0, xs, W, true), stacked = run_last_reads(model, h0, xs, W, false);
    const auto [hT, ys] = elman_loop(h0, xs, W);
    expect_near(kept.values.at("hT"), hT);
    expect_near(kept.values.at("last"), ys[steps - 1]);
    expect_near(kept.values.at("third"), ys[2]);
    expect_near(kept.values.at("first"), ys[0]);
    for (const auto& [name, v] : stacked.values) expect_near(kept.values.at(name), v, 0.0);
    expect_near(kept.h0, stacked.h0, 0.0);
    expect_near(kept.xs, stacked.xs, 0.0);
    expect_near(kept.W, stacked.W, 0.0);
    // Stacked, each output holds steps x 3 doubles; kept last, none is built for ys0 (and
    // for ys1 when its Slice reads the last step); ys2 is read at step 0 and stays stacked.
    // A captured loop stacks the one value the three outputs are into one buffer they share.
    const std::size_t one_output = static_cast<std::size_t>(steps) * 3 * sizeof(double);
    ASSERT_EQ(kept.captured, stacked.captured);
    EXPECT_EQ(stacked.stacked_bytes, (stacked.captured ? 1 : 3) * one_output) << steps << " steps";
    EXPECT_EQ(kept.stacked_bytes, (kept.captured ? 1 : steps == 3 ? 1 : 2) * one_output) << steps << " steps";
  }
}

// Opset 8's sequence_lens: entry b runs its first lens[b] steps (reversed, from its last
// valid one), its scan outputs padded with zeros.
TEST(OnnxScan, Opset8SequenceLensShorterThanTheSequence) {
  for (const std::int64_t direction : {0, 1}) {
    ::onnx::ModelProto proto;
    ASSERT_TRUE(proto.ParseFromString(elman_model(8, {2, 3}, {2, 4, 3}, {ints_attribute("directions", {direction})})));
    auto* g = proto.mutable_graph();
    g->mutable_node(0)->set_input(0, "lens");
    *g->add_input() = g->input(0);
    g->mutable_input(g->input_size() - 1)->set_name("lens");
    auto* shape = g->mutable_input(g->input_size() - 1)->mutable_type()->mutable_tensor_type();
    shape->set_elem_type(::onnx::TensorProto::INT64);
    shape->mutable_shape()->mutable_dim(0)->set_dim_value(2);
    shape->mutable_shape()->mutable_dim()->RemoveLast();
    const auto model = onnx_io::load_from_bytes(proto.SerializeAsString());
    const Tensor h0 = random_tensor({2, 3}, 16), xs = random_tensor({2, 4, 3}, 17), W = random_tensor({3, 3}, 18);
    const Tensor lens = int64_tensor({4, 2});
    Tape tape;
    const auto out = model.run({{"lens", lens}, {"h0", h0}, {"xs", xs}, {"W", W}});
    for (std::int64_t b = 0; b < 2; ++b) {
      const std::int64_t n = b == 0 ? 4 : 2;
      Tensor steps = slice(xs[b], 0, 0, n);
      if (direction == 1) steps = take(steps, n == 4 ? int64_tensor({3, 2, 1, 0}) : int64_tensor({1, 0}), 0);
      const auto [hT, ys] = elman_loop(h0[b], steps, W);
      expect_near(out.at("hT").value()[b], hT);
      expect_near(out.at("ys").value()[b], concat({ys, zeros({4 - n, 3}, DType::float64)}, 0));
    }
    const auto f = [&](std::span<const Var> v) {
      return model.run({{"lens", lens}, {"h0", v[0]}, {"xs", v[1]}, {"W", v[2]}}).at("ys");
    };
    const auto report = check_gradients(f, {h0, xs, W});
    EXPECT_TRUE(report.ok) << report.failure;
  }
}

}  // namespace
}  // namespace recur::testing
