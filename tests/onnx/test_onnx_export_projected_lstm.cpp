// An LSTM with a projection (proj_size) saved by recur::onnx_io::save as Scans of its cell's
// equations (ONNX's LSTM operator has no projection), read back by recur's importer: the
// model gives the layer's output, h_n and c_n (float64 to 1e-12, float32 to 1e-6), stacked
// and bidirectional, batch-first, with and without fed initial states and biases; the
// model holds no LSTM node. sequence_lens is refused, naming why.
#include <gtest/gtest.h>

#include <recur/ops/onnx/export_layers.hpp>
#include <recur/ops/onnx/model.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

struct Case {
  nn::RecurrentOptions options;
  bool initial_state;
  const char* name;
};

void expect_round_trip(const Case& c) {
  SCOPED_TRACE(c.name);
  Generator gen(11);
  const nn::LSTM lstm(c.options, gen);
  onnx_io::LayerExportOptions save;
  save.initial_state = c.initial_state;
  const ::onnx::ModelProto proto = onnx_io::layer_model(lstm, save);
  for (const auto& node : proto.graph().node()) EXPECT_NE(node.op_type(), "LSTM");
  const onnx_io::Model model = onnx_io::load_from_bytes(proto.SerializeAsString());

  const nn::RecurrentOptions& o = c.options;
  const std::int64_t t = 5, b = 2, states = (o.bidirectional ? 2 : 1) * o.num_layers;
  Tape tape;
  const Var x = tape.constant(normal(o.batch_first ? Shape{b, t, o.input_size} : Shape{t, b, o.input_size}, 0.0, 1.0,
                                     gen, o.dtype));
  nn::RecurrentState state;
  std::map<std::string, Var> feed{{"input", x}};
  if (c.initial_state) {
    state.h = tape.constant(normal({states, b, o.proj_size}, 0.0, 1.0, gen, o.dtype));
    state.c = tape.constant(normal({states, b, o.hidden_size}, 0.0, 1.0, gen, o.dtype));
    feed.emplace("h0", state.h);
    feed.emplace("c0", state.c);
  }
  const nn::RecurrentOutput want = lstm(x, state);
  const std::map<std::string, Var> got = model.run(feed);
  const double tolerance = o.dtype == DType::float64 ? 1e-12 : 1e-6;
  for (const auto& [name, expected] : {std::pair{"output", want.output}, {"h_n", want.h_n}, {"c_n", want.c_n}}) {
    const Tensor& g = got.at(name).value();
    ASSERT_EQ(g.shape(), expected.shape()) << name;
    EXPECT_LE(max_abs_diff(g, expected.value()), tolerance) << name;
  }
}

nn::RecurrentOptions lstm_options(std::int64_t layers, bool bidirectional, bool batch_first, bool bias, DType dtype) {
  return {.input_size = 3, .hidden_size = 4, .num_layers = layers, .proj_size = 2, .bias = bias,
          .batch_first = batch_first, .bidirectional = bidirectional, .dtype = dtype};
}

TEST(OnnxExportProjectedLstm, ImportedModelGivesTheLayersOutputs) {
  expect_round_trip({lstm_options(2, true, false, true, DType::float64), true, "stacked bidirectional, states fed"});
  expect_round_trip({lstm_options(1, false, true, false, DType::float64), false, "batch-first, no bias, zero states"});
  expect_round_trip({lstm_options(2, false, false, true, DType::float32), false, "stacked float32"});
}

TEST(OnnxExportProjectedLstm, SequenceLensIsRefused) {
  Generator gen(1);
  const nn::LSTM lstm(lstm_options(1, false, false, true, DType::float64), gen);
  onnx_io::LayerExportOptions save;
  save.sequence_lens = true;
  testing::expect_error<onnx_io::UnsupportedError>([&] { (void)onnx_io::layer_model(lstm, save); },
                                                   {"onnx_io::save", "sequence_lens", "proj_size = 2", "Scans"});
}

}  // namespace
}  // namespace recur
