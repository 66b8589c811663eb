// The LSTM with a projection (PyTorch's proj_size) and the cell descriptors it was added
// through. Against PyTorch: test_nn_recurrent_torch.cpp (tests/data/rnn_proj/); finite
// differences: the rows lstm_cell_projected and fused_recurrence_split_lstm_projected_* of
// tests/grad_cases/recurrent.cpp. Here: the fused op against the scan of cells with every
// kind of truncation and with lengths, the layer's parameters, and the errors.
#include <gtest/gtest.h>

#include <recur/ops/nn/scan_recurrence.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;
using recur::testing::expect_error;

constexpr DType f64 = DType::float64;

struct Direction {
  Tensor outputs, c_n;
  std::vector<Tensor> grads;  // x, w_ih, w_hh, h0, c0, b_ih, b_hh, w_hr
};

// One direction, fused or as the scan of cells, and the gradients of a fixed random loss.
Direction run(const FusedRecurrenceOptions& o, bool fused, std::uint64_t seed) {
  const std::int64_t steps = 7, batch = 3, in = 2, h = 4, p = 2;
  Generator gen(seed);
  Tape tape;
  auto leaf = [&](Shape s) { return tape.variable(normal(s, 0, 0.5, gen, f64)); };
  const std::vector<Var> v{leaf({steps, batch, in}), leaf({4 * h, in}), leaf({4 * h, p}), leaf({batch, p}),
                           leaf({batch, h}),           leaf({4 * h}),     leaf({4 * h}),    leaf({p, h})};
  const CellWeights w{v[1], v[2], v[5], v[6], v[7]};
  const FusedOutputs r = fused ? fused_recurrence_split(o, v[0], w, v[3], v[4])
                               : detail::scan_recurrence_split(o, v[0], w, v[3], v[4]);
  const Var loss = sum(r.outputs * tape.constant(normal({steps, batch, p}, 0, 1, gen, f64))) +
                   sum(r.c_n * tape.constant(normal({batch, h}, 0, 1, gen, f64)));
  Direction out{r.outputs.value(), r.c_n.value(), {}};
  for (const Var& g : grad(std::span<const Var>(&loss, 1), v)) out.grads.push_back(g.value());
  return out;
}

TEST(ProjectedLstm, FusedMatchesTheScanOfCellsInValuesAndEveryGradient) {
  std::vector<FusedRecurrenceOptions> cases;
  for (bool reverse : {false, true}) {
    for (std::int64_t truncate : {-1, 0, 1, 3, 7, 9}) cases.push_back({.reverse = reverse, .truncate_gradient = truncate});
    cases.push_back({.reverse = reverse, .lengths = SequenceLengths({7, 2, 5})});
  }
  std::uint64_t seed = 1;
  for (const FusedRecurrenceOptions& o : cases) {
    const Direction fused = run(o, true, seed), scanned = run(o, false, seed);
    ++seed;
    const std::string what = std::string(o.reverse ? "reverse" : "forward") + ", truncate " +
                             std::to_string(o.truncate_gradient) + (o.lengths.given ? ", lengths" : "");
    EXPECT_LT(max_abs_diff(fused.outputs, scanned.outputs), 1e-13) << what;
    EXPECT_LT(max_abs_diff(fused.c_n, scanned.c_n), 1e-13) << what;
    ASSERT_EQ(fused.grads.size(), 8u);
    for (std::size_t i = 0; i < 8; ++i) {
      EXPECT_LT(max_abs_diff(fused.grads[i], scanned.grads[i]), 1e-12) << what << ", gradient " << i;
      if (o.truncate_gradient < 0 || o.truncate_gradient >= 7) {  // not a comparison of zeros
        EXPECT_GT(max_abs_diff(fused.grads[i], zeros_like(fused.grads[i])), 0.0) << what << ", gradient " << i;
      }
    }
  }
}

TEST(ProjectedLstm, TheLayerHasPyTorchsParameters) {
  Generator gen(3);
  const LSTM lstm({.input_size = 5, .hidden_size = 4, .num_layers = 2, .proj_size = 3, .bidirectional = true,
                   .dtype = f64},
                  gen);
  std::map<std::string, Shape> shapes;
  for (const auto& [name, p] : lstm.named_parameters()) shapes[name] = p.shape();
  EXPECT_EQ(shapes.size(), 20u);  // 5 parameters x 2 layers x 2 directions
  EXPECT_EQ(shapes.at("weight_ih_l0"), (Shape{16, 5}));
  EXPECT_EQ(shapes.at("weight_hh_l0"), (Shape{16, 3}));
  EXPECT_EQ(shapes.at("weight_hr_l0"), (Shape{3, 4}));
  EXPECT_EQ(shapes.at("weight_ih_l1_reverse"), (Shape{16, 6}));  // 2 directions x P
  EXPECT_EQ(shapes.at("weight_hr_l1_reverse"), (Shape{3, 4}));
  Tape tape;
  const RecurrentOutput out = lstm(tape.variable(zeros({6, 2, 5}, f64)));
  EXPECT_EQ(out.output.shape(), (Shape{6, 2, 6}));
  EXPECT_EQ(out.h_n.shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(out.c_n.shape(), (Shape{4, 2, 4}));
}

TEST(ProjectedLstm, BadSizesAndArgumentsAreClearErrors) {
  Generator gen(4);
  expect_error<ValueError>([&] { LSTM({.input_size = 2, .hidden_size = 3, .proj_size = 3}, gen); },
                           {"LSTM", "proj_size", "= 3", "hidden_size = 3"});
  expect_error<ValueError>([&] { GRU({.input_size = 2, .hidden_size = 3, .proj_size = 1}, gen); },
                           {"GRU", "proj_size", "only an LSTM"});
  const LSTM lstm({.input_size = 2, .hidden_size = 3, .proj_size = 2, .dtype = f64}, gen);
  Tape tape;
  const Var x = tape.variable(zeros({4, 1, 2}, f64));
  const Var h_of_size_h = tape.variable(zeros({1, 1, 3}, f64)), c_of_size_p = tape.variable(zeros({1, 1, 2}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { (void)lstm(x, {h_of_size_h}); },
                                   {"LSTM", "'h0'", "[1, 1, 2]", "proj_size", "[1, 1, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { (void)lstm(x, {Var(), c_of_size_p}); }, {"LSTM", "'c0'", "[1, 1, 3]"});

  const Var h0 = tape.variable(zeros({1, 2}, f64)), c0 = tape.variable(zeros({1, 3}, f64));
  const CellWeights w{tape.variable(zeros({12, 2}, f64)), tape.variable(zeros({12, 2}, f64)), Var(), Var(),
                      tape.variable(zeros({2, 3}, f64))};
  expect_clean_failure<ValueError>(tape, [&] { (void)fused_recurrence({}, x, w, h0, c0); },
                                   {"fused_recurrence", "'w_hr'", "fused_recurrence_split"});
  CellWeights wide = w;
  wide.w_hr = tape.variable(zeros({3, 3}, f64));  // P must be h's size and below H
  expect_clean_failure<ShapeError>(tape, [&] { (void)fused_recurrence_split({}, x, wide, h0, c0); },
                                   {"fused_recurrence", "'w_hr' [3, 3]", "P < H"});
  const Var x0 = index(x, 0, 0);
  expect_clean_failure<ValueError>(
      tape, [&] { (void)rnn_cell(x0, h0, {.w_ih = w.w_ih, .w_hh = w.w_hh, .w_hr = w.w_hr}); },
      {"rnn_cell", "'w_hr'", "only an LSTM"});
}

// The descriptors' gate orders: ONNX's layout, read back into PyTorch's, is the identity,
// and the LSTM's and GRU's are the ones ONNX's operators document (i o f c; z r h).
TEST(CellDescriptors, GateOrdersRoundTripAndMatchOnnx) {
  for (CellKind kind : {CellKind::rnn, CellKind::lstm, CellKind::gru}) {
    const CellDescriptor& d = describe(kind);
    EXPECT_EQ(d.kind, kind);
    EXPECT_EQ(d.name, name_of(kind));
    const std::vector<std::int64_t> back = d.pytorch_gates_in_onnx();
    ASSERT_EQ(static_cast<std::int64_t>(back.size()), d.gate_count());
    for (std::int64_t k = 0; k < d.gate_count(); ++k)
      EXPECT_EQ(d.onnx_gates[static_cast<std::size_t>(back[static_cast<std::size_t>(k)])], k) << d.name;
  }
  auto names_in_onnx = [](CellKind kind) {
    std::string s;
    for (std::int64_t g : describe(kind).onnx_gates) s += describe(kind).gates[static_cast<std::size_t>(g)].substr(0, 1);
    return s;
  };
  EXPECT_EQ(names_in_onnx(CellKind::lstm), "iofc");
  EXPECT_EQ(names_in_onnx(CellKind::gru), "urn");  // update (z), reset (r), new (h)
  EXPECT_EQ(describe(CellKind::lstm).layer, "LSTM");
  EXPECT_EQ(describe(CellKind::gru).cell, "GRUCell");
  EXPECT_TRUE(describe(CellKind::lstm).projection);
  EXPECT_FALSE(describe(CellKind::gru).projection);
  const auto specs = cell_parameter_specs(CellKind::lstm, {.input = 5, .hidden = 4, .proj = 3}, true);
  ASSERT_EQ(specs.size(), 5u);
  EXPECT_EQ(specs[1].name, "weight_hh");
  EXPECT_EQ(specs[1].shape, (Shape{16, 3}));
  EXPECT_EQ(specs[4].name, "weight_hr");
}

}  // namespace
}  // namespace recur::nn
