// Imported RNN, GRU and LSTM nodes with the opset-14 attributes beyond the defaults
// (sequence_lens, peepholes, activations with alpha and beta, clip, input_forget), against
// ONNX's equations in NumPy (tests/fixtures/make_onnx_recurrent_fixtures.py, which checks
// them against the ONNX project's reference implementations where those reach; outputs under
// tests/data/onnx_recurrent/), and their gradients against finite differences in float64,
// first and second order, sequence_lens included (an entry of 0 too: that element's Y is
// zeros and its Y_h, Y_c its initial states).
#include <gtest/gtest.h>

#include <filesystem>

#include <recur/recur.hpp>
#include <recur/ops/onnx/model.hpp>

#include "expect_error.hpp"
#include "model_builder.hpp"
#include "onnx_test_values.hpp"

namespace recur::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kDir = fs::path(RECUR_TEST_DATA) / "onnx_recurrent";

struct Case {
  onnx_io::Model model;
  std::vector<Tensor> inputs;   // in the order of model.input_names()
  std::vector<Tensor> outputs;  // Y, Y_h (, Y_c)
};

Case load_case(const std::string& name) {
  const fs::path dir = kDir / name;
  Case c{onnx_io::load((dir / "model.onnx").string()), {}, {}};
  const fs::path set = dir / "test_data_set_0";
  for (std::size_t k = 0; k < c.model.input_names().size(); ++k)
    c.inputs.push_back(onnx_io::load_tensor((set / ("input_" + std::to_string(k) + ".pb")).string()));
  for (std::size_t k = 0; k < c.model.output_names().size(); ++k)
    c.outputs.push_back(onnx_io::load_tensor((set / ("output_" + std::to_string(k) + ".pb")).string()));
  return c;
}

// Every output of the model, flattened and joined (what the gradient check weighs).
Var joined_outputs(const Case& c, std::span<const Var> float_inputs) {
  std::map<std::string, Var> feed;
  std::size_t next = 0;
  for (std::size_t k = 0; k < c.inputs.size(); ++k)
    feed.emplace(c.model.input_names()[k],
                 c.inputs[k].dtype() == DType::float64 ? float_inputs[next++] : Var(c.inputs[k]));
  const auto out = c.model.run(feed);
  std::vector<Var> parts;
  for (const auto& name : c.model.output_names()) parts.push_back(reshape(out.at(name), {-1}));
  return concat(parts, 0);
}

class OnnxRecurrentAttributes : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxRecurrentAttributes, MatchesOnnxEquations) {
  const Case c = load_case(GetParam());
  Tape tape;
  std::map<std::string, Var> feed;
  for (std::size_t k = 0; k < c.inputs.size(); ++k) feed.emplace(c.model.input_names()[k], c.inputs[k]);
  const auto out = c.model.run(feed);
  for (std::size_t k = 0; k < c.outputs.size(); ++k) {
    SCOPED_TRACE(c.model.output_names()[k]);
    expect_near(out.at(c.model.output_names()[k]).value(), c.outputs[k], 1e-12);
  }
}

TEST_P(OnnxRecurrentAttributes, GradientsMatchFiniteDifferences) {
  const Case c = load_case(GetParam());
  std::vector<Tensor> float_inputs;
  for (const auto& t : c.inputs)
    if (t.dtype() == DType::float64) float_inputs.push_back(t);
  const auto report = check_gradients([&](std::span<const Var> xs) { return joined_outputs(c, xs); }, float_inputs);
  EXPECT_TRUE(report.ok) << report.failure;
}

INSTANTIATE_TEST_SUITE_P(Cases, OnnxRecurrentAttributes,
                         ::testing::Values("lstm_peepholes", "lstm_activations", "lstm_clip_input_forget_peepholes",
                                           "lstm_sequence_lens_bidirectional",
                                           "lstm_sequence_lens_peepholes_reverse_batchwise",
                                           "gru_activations_clip_sequence_lens", "gru_activations",
                                           "gru_sequence_lens", "rnn_activations_bidirectional",
                                           "rnn_sigmoid_clip_batchwise", "rnn_sequence_lens",
                                           "lstm_sequence_lens_zero_bidirectional"));

// Default cells stay on the fused layer op (no scan on the tape), with sequence_lens too;
// peepholes, clip and other activations run on scan, one per direction the fused op cannot
// express (the bidirectional RNN's Relu direction stays fused).
TEST(OnnxRecurrentAttributes, FusedPathForTheDefaultsScanForTheRest) {
  const std::vector<std::pair<std::string, std::size_t>> scans_of{
      {"lstm_sequence_lens_bidirectional", 0}, {"gru_sequence_lens", 0}, {"rnn_sequence_lens", 0},
      {"lstm_peepholes", 1}, {"gru_activations_clip_sequence_lens", 1}, {"rnn_activations_bidirectional", 1}};
  for (const auto& [name, scans] : scans_of) {
    const Case c = load_case(name);
    Tape tape;
    std::map<std::string, Var> feed;
    for (std::size_t k = 0; k < c.inputs.size(); ++k)
      feed.emplace(c.model.input_names()[k], c.inputs[k].dtype() == DType::float64 ? tape.variable(c.inputs[k])
                                                                                       : Var(c.inputs[k]));
    c.model.run(feed);
    EXPECT_EQ(tape.memory_report().regions.size(), scans) << name;
  }
}

// An RNN node naming `activations`: the bytes of its model.
std::string rnn_with_activations(const std::vector<std::string>& activations) {
  GraphBuilder g("rnn");
  g.input("X", {3, 2, 2}).input("W", {1, 2, 2}).input("R", {1, 2, 2}).output("Y", {3, 1, 2, 2});
  ::onnx::AttributeProto a;
  a.set_name("activations");
  a.set_type(::onnx::AttributeProto::STRINGS);
  for (const auto& name : activations) a.add_strings(name);
  g.node("RNN", {"X", "W", "R"}, {"Y"}, {int_attribute("hidden_size", 2), a});
  return model_bytes(g.graph(), 14);
}

TEST(OnnxRecurrentAttributes, ActivationsOutsideOnnxListAreUnsupported) {
  const auto model = onnx_io::load_from_bytes(rnn_with_activations({"Gelu"}), "rnn_gelu");
  Tape tape;
  const std::map<std::string, Var> feed{{"X", random_tensor({3, 2, 2}, 1)}, {"W", random_tensor({1, 2, 2}, 2)},
                                        {"R", random_tensor({1, 2, 2}, 3)}};
  const auto before = tape.size();
  expect_error<onnx_io::UnsupportedError>([&] { model.run(feed); }, {"rnn_gelu", "RNN", "activation 'Gelu'", "Softplus"});
  EXPECT_EQ(tape.size(), before);
  const auto two = onnx_io::load_from_bytes(rnn_with_activations({"Tanh", "Relu"}), "rnn_two");
  expect_error<ValueError>([&] { two.run(feed); }, {"rnn_two", "activations names 2 functions", "1 per direction"});
  // Names match without regard to case, as in ONNX Runtime.
  const auto lower = onnx_io::load_from_bytes(rnn_with_activations({"softsign"}), "rnn_softsign");
  const Var y = lower.run(feed).at("Y");
  const Tensor x = feed.at("X").value(), w = feed.at("W").value()[0], r = feed.at("R").value()[0];
  const Tensor pre = matmul(x[0], transpose(w));  // the first step, from h0 = 0
  expect_near(y.value()[0][0], pre / (abs(pre) + 1.0));
}

}  // namespace
}  // namespace recur::testing
