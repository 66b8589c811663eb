// recur::onnx_io::save of nn::RNN / LSTM / GRU stacks read back by recur's own importer
// (recur::onnx_io::load, Model::run): the saved model gives the layer's output, h_n and c_n
// (float64 to 1e-12, float32 to 1e-6) for stacked, bidirectional and batch-first layers,
// both GRU forms, RNN's two nonlinearities, no bias, fed initial states and sequence_lens.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <ostream>
#include <string>

#include <unistd.h>

#include <recur/ops/onnx/export_layers.hpp>
#include <recur/ops/onnx/model.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;
using nn::CellKind;

struct RoundTrip {
  CellKind kind;
  nn::RecurrentOptions options;
  recur::onnx_io::LayerExportOptions save{};
  std::string name;
};

void PrintTo(const RoundTrip& c, std::ostream* os) { *os << c.name; }  // test names in ctest

nn::RecurrentOptions layer(std::int64_t layers, bool bidirectional, bool batch_first, DType dtype) {
  nn::RecurrentOptions o;
  o.input_size = 3;
  o.hidden_size = 4;
  o.num_layers = layers;
  o.bidirectional = bidirectional;
  o.batch_first = batch_first;
  o.dtype = dtype;
  return o;
}

std::vector<RoundTrip> cases() {
  const DType f32 = DType::float32, f64 = DType::float64;
  nn::RecurrentOptions onnx_gru = layer(2, true, false, f32);
  onnx_gru.linear_before_reset = false;
  nn::RecurrentOptions relu = layer(1, false, true, f64);
  relu.nonlinearity = nn::Nonlinearity::relu;
  relu.bias = false;
  // (GCC 12 warns of uninitialized strings for `{...}` option braces in this list.)
  auto with = [](bool initial_state, bool sequence_lens) {
    recur::onnx_io::LayerExportOptions save;
    save.initial_state = initial_state;
    save.sequence_lens = sequence_lens;
    return save;
  };
  return {
      {CellKind::lstm, layer(2, true, false, f64), with(true, true), "lstm_bi_stacked"},
      {CellKind::lstm, layer(1, false, true, f32), with(false, false), "lstm_batch_first"},
      {CellKind::gru, layer(2, true, true, f64), with(true, false), "gru_torch_form"},
      {CellKind::gru, onnx_gru, with(true, true), "gru_onnx_form"},
      {CellKind::rnn, relu, with(true, false), "rnn_relu_no_bias"},
      {CellKind::rnn, layer(3, true, false, f32), with(false, true), "rnn_tanh_stacked"},
  };
}

std::unique_ptr<nn::RecurrentLayer> make(const RoundTrip& c) {
  Generator gen(7);
  if (c.kind == CellKind::lstm) return std::make_unique<nn::LSTM>(c.options, gen);
  if (c.kind == CellKind::gru) return std::make_unique<nn::GRU>(c.options, gen);
  return std::make_unique<nn::RNN>(c.options, gen);
}

// Saves c's layer, loads it, runs both on the same input (and states, and `lengths` as
// sequence_lens when the case has it) and compares every output.
void expect_round_trip(const RoundTrip& c, const std::vector<std::int64_t>& lengths) {
  const auto rnn = make(c);
  const fs::path path =
      fs::temp_directory_path() / ("recur_layer_round_trip_" + std::to_string(getpid()) + "_" + c.name + ".onnx");
  recur::onnx_io::save(path, *rnn, c.save);
  const recur::onnx_io::Model model = recur::onnx_io::load(path.string());
  fs::remove(path);

  const nn::RecurrentOptions& o = c.options;
  const std::int64_t t = 5, b = 2, states = (o.bidirectional ? 2 : 1) * o.num_layers;
  Generator gen(8);
  Tape tape;
  const Var x = tape.constant(normal(o.batch_first ? Shape{b, t, 3} : Shape{t, b, 3}, 0.0, 1.0, gen, o.dtype));
  nn::RecurrentState state;
  std::map<std::string, Var> feed{{"input", x}};
  if (c.save.initial_state) {
    state.h = tape.constant(normal({states, b, 4}, 0.0, 1.0, gen, o.dtype));
    feed.emplace("h0", state.h);
    if (c.kind == CellKind::lstm) {
      state.c = tape.constant(normal({states, b, 4}, 0.0, 1.0, gen, o.dtype));
      feed.emplace("c0", state.c);
    }
  }
  SequenceLengths given;
  if (c.save.sequence_lens) {
    const Tensor l = from_vector(lengths, {b});
    feed.emplace("sequence_lens", tape.constant(l));
    given = l;
  }
  const nn::RecurrentOutput want = (*rnn)(x, state, given);
  std::map<std::string, Var> got;
  try {
    got = model.run(feed);
  } catch (const recur::onnx_io::UnsupportedError& e) {
    // recur's importer takes sequence_lens shorter than the sequence once issue 10's
    // importer work on RNN/LSTM/GRU is in; until then this case says so and is skipped.
    if (std::string(e.what()).find("sequence_lens shorter") == std::string::npos) throw;
    GTEST_SKIP() << e.what();
  }

  const double tolerance = o.dtype == DType::float64 ? 1e-12 : 1e-6;
  std::vector<std::pair<std::string, Var>> outputs{{"output", want.output}, {"h_n", want.h_n}};
  if (c.kind == CellKind::lstm) outputs.emplace_back("c_n", want.c_n);
  ASSERT_EQ(model.output_names().size(), outputs.size());
  for (const auto& [name, expected] : outputs) {
    const Tensor& g = got.at(name).value();
    ASSERT_EQ(g.shape(), expected.shape()) << name;
    EXPECT_LE(max_abs_diff(g, expected.value()), tolerance) << name;
  }
}

class LayerRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(LayerRoundTrip, ImportedModelGivesTheLayersOutputs) { expect_round_trip(GetParam(), {5, 5}); }

// Sequences shorter than T: outputs past a length are zero, final states at its last step.
class ShortSequencesRoundTrip : public ::testing::TestWithParam<RoundTrip> {};

TEST_P(ShortSequencesRoundTrip, ImportedModelGivesTheLayersOutputs) { expect_round_trip(GetParam(), {5, 3}); }

std::vector<RoundTrip> cases_with_sequence_lens() {
  std::vector<RoundTrip> all = cases();
  std::erase_if(all, [](const RoundTrip& c) { return !c.save.sequence_lens; });
  return all;
}

const auto case_name = [](const auto& info) { return info.param.name; };
INSTANTIATE_TEST_SUITE_P(Layers, LayerRoundTrip, ::testing::ValuesIn(cases()), case_name);
INSTANTIATE_TEST_SUITE_P(Layers, ShortSequencesRoundTrip, ::testing::ValuesIn(cases_with_sequence_lens()), case_name);

}  // namespace
}  // namespace recur
