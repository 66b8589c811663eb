// Imported RNN, GRU and LSTM nodes (on recur's fused layer ops): GRU's two forms against
// ONNX's equations written with recur's ops, the reverse direction against the forward one
// on the reversed sequence, and gradients to every input and weight against finite
// differences in float64 (bidirectional, both layouts).
#include <gtest/gtest.h>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

constexpr std::int64_t T = 3, B = 2, I = 3, H = 2;

std::int64_t gates_of(const std::string& op) { return op == "LSTM" ? 4 : op == "GRU" ? 3 : 1; }

// A model of one `op` node: inputs X, W, R, B, initial_h (and initial_c for LSTM).
std::string recurrent_model(const std::string& op, const std::string& direction, std::int64_t layout,
                            std::int64_t linear_before_reset = 0) {
  const std::int64_t D = direction == "bidirectional" ? 2 : 1, G = gates_of(op);
  const std::vector<std::int64_t> x = layout ? std::vector<std::int64_t>{B, T, I} : std::vector<std::int64_t>{T, B, I};
  const std::vector<std::int64_t> state = layout ? std::vector<std::int64_t>{B, D, H} : std::vector<std::int64_t>{D, B, H};
  const std::vector<std::int64_t> y = layout ? std::vector<std::int64_t>{B, T, D, H} : std::vector<std::int64_t>{T, D, B, H};
  GraphBuilder g("recurrent");
  g.input("X", x).input("W", {D, G * H, I}).input("R", {D, G * H, H}).input("B", {D, 2 * G * H}).input("h0", state);
  std::vector<std::string> inputs{"X", "W", "R", "B", "", "h0"};
  std::vector<std::string> outputs{"Y", "Y_h"};
  g.output("Y", y).output("Y_h", state);
  if (op == "LSTM") {
    g.input("c0", state).output("Y_c", state);
    inputs.push_back("c0");
    outputs.push_back("Y_c");
  }
  std::vector<::onnx::AttributeProto> attributes{int_attribute("hidden_size", H), int_attribute("layout", layout)};
  ::onnx::AttributeProto d;
  d.set_name("direction");
  d.set_type(::onnx::AttributeProto::STRING);
  d.set_s(direction);
  attributes.push_back(d);
  if (op == "GRU") attributes.push_back(int_attribute("linear_before_reset", linear_before_reset));
  g.node(op, inputs, outputs, attributes);
  return model_bytes(g.graph(), 14);
}

struct Feed {
  std::map<std::string, Tensor> tensors;
};

Feed random_feed(const std::string& op, std::int64_t D, std::int64_t layout, std::uint64_t seed) {
  const std::int64_t G = gates_of(op);
  Feed f;
  f.tensors["X"] = random_tensor(layout ? Shape{B, T, I} : Shape{T, B, I}, seed);
  f.tensors["W"] = random_tensor({D, G * H, I}, seed + 1);
  f.tensors["R"] = random_tensor({D, G * H, H}, seed + 2);
  f.tensors["B"] = random_tensor({D, 2 * G * H}, seed + 3);
  f.tensors["h0"] = random_tensor(layout ? Shape{B, D, H} : Shape{D, B, H}, seed + 4);
  if (op == "LSTM") f.tensors["c0"] = random_tensor(layout ? Shape{B, D, H} : Shape{D, B, H}, seed + 5);
  return f;
}

// ONNX's GRU equations (gates z, r, h) with recur's ops, one direction, forward.
Tensor gru_reference(const Feed& f, bool linear_before_reset) {
  const auto block = [](const Tensor& w, std::int64_t g) { return slice(w[0], 0, g * H, (g + 1) * H); };
  const Tensor &W = f.tensors.at("W"), &R = f.tensors.at("R"), &Bias = f.tensors.at("B");
  const auto wb = [&](std::int64_t g) { return slice(Bias[0], 0, g * H, (g + 1) * H); };
  const auto rb = [&](std::int64_t g) { return slice(Bias[0], 0, (3 + g) * H, (4 + g) * H); };
  Tensor h = f.tensors.at("h0")[0];
  std::vector<Tensor> ys;
  for (std::int64_t t = 0; t < T; ++t) {
    const Tensor x = f.tensors.at("X")[t];
    const auto gate = [&](std::int64_t g) {
      return sigmoid(matmul(x, transpose(block(W, g))) + matmul(h, transpose(block(R, g))) + wb(g) + rb(g));
    };
    const Tensor z = gate(0), r = gate(1);
    const Tensor xh = matmul(x, transpose(block(W, 2))) + wb(2);
    const Tensor n = linear_before_reset ? tanh(xh + r * (matmul(h, transpose(block(R, 2))) + rb(2)))
                                         : tanh(xh + matmul(r * h, transpose(block(R, 2))) + rb(2));
    h = (1.0 - z) * n + z * h;
    ys.push_back(h);
  }
  return unsqueeze(stack(ys, 0), 1);  // [T, 1, B, H]
}

std::map<std::string, Var> run(const onnx_io::Model& model, const Feed& f) {
  std::map<std::string, Var> feed;
  for (const auto& [name, t] : f.tensors) feed.emplace(name, t);
  return model.run(feed);
}

class OnnxGruForm : public ::testing::TestWithParam<int> {};

TEST_P(OnnxGruForm, MatchesOnnxEquations) {
  const auto model = onnx_io::load_from_bytes(recurrent_model("GRU", "forward", 0, GetParam()));
  const Feed f = random_feed("GRU", 1, 0, 10);
  Tape tape;
  const auto out = run(model, f);
  const Tensor want = gru_reference(f, GetParam() != 0);
  expect_near(out.at("Y").value(), want);
  expect_near(out.at("Y_h").value(), index(want, 0, T - 1));
}

INSTANTIATE_TEST_SUITE_P(LinearBeforeReset, OnnxGruForm, ::testing::Values(0, 1));

// Bidirectional: direction 1 on X is direction 0 of a forward model with the second
// direction's weights on X reversed in time, its outputs reversed back.
class OnnxRecurrentOp : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxRecurrentOp, ReverseDirectionIsForwardOnTheReversedSequence) {
  const std::string op = GetParam();
  const auto both = onnx_io::load_from_bytes(recurrent_model(op, "bidirectional", 0));
  const auto forward = onnx_io::load_from_bytes(recurrent_model(op, "forward", 0));
  const Feed f = random_feed(op, 2, 0, 20);
  Feed second;
  const Tensor reversed_time = tensor({2, 1, 0}, DType::int64);
  for (const auto& [name, t] : f.tensors)
    second.tensors[name] = name == "X" ? take(t, reversed_time, 0) : slice(t, 0, 1, 2);
  Tape tape;
  const auto out = run(both, f);
  const auto fwd = run(forward, second);
  expect_near(index(out.at("Y").value(), 1, 1), take(index(fwd.at("Y").value(), 1, 0), reversed_time, 0));
  expect_near(index(out.at("Y_h").value(), 0, 1), index(fwd.at("Y_h").value(), 0, 0));
}

TEST_P(OnnxRecurrentOp, GradientsMatchFiniteDifferences) {
  const std::string op = GetParam();
  for (const std::int64_t layout : {0, 1}) {
    const auto model = onnx_io::load_from_bytes(recurrent_model(op, "bidirectional", layout));
    const Feed f = random_feed(op, 2, layout, 30 + static_cast<std::uint64_t>(layout));
    std::vector<std::string> names;
    std::vector<Tensor> values;
    for (const auto& [name, t] : f.tensors) {
      names.push_back(name);
      values.push_back(t);
    }
    for (const std::string output : {"Y", "Y_h"}) {
      const auto fn = [&](std::span<const Var> xs) {
        std::map<std::string, Var> feed;
        for (std::size_t i = 0; i < names.size(); ++i) feed.emplace(names[i], xs[i]);
        return model.run(feed).at(output);
      };
      const auto report = check_gradients(fn, values);
      EXPECT_TRUE(report.ok) << op << " layout " << layout << " " << output << ": " << report.failure;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, OnnxRecurrentOp, ::testing::Values("RNN", "GRU", "LSTM"));

}  // namespace
}  // namespace recur::testing
