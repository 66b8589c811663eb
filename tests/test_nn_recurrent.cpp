// RNN, LSTM and GRU layers without PyTorch (test_nn_recurrent_torch.cpp has the numbers):
// parameter names and shapes, argument errors that record nothing, and relations that
// must hold whatever the weights: batch_first is the transposed time-first layer, the
// reverse direction is the forward one run over the reversed sequence, missing states
// are zeros, checkpointing changes nothing and truncation stops gradients where it should.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;
using recur::testing::expect_error;

constexpr DType f64 = DType::float64;
constexpr std::int64_t kT = 4, kB = 2, kI = 3, kH = 2;

RecurrentOptions options(std::int64_t layers = 1, bool bidirectional = false) {
  RecurrentOptions o;
  o.input_size = kI;
  o.hidden_size = kH;
  o.num_layers = layers;
  o.bidirectional = bidirectional;
  o.dtype = f64;
  return o;
}

// Copies every parameter value of `from` into the same-named parameter of `to`.
void copy_parameters(const Module& from, const Module& to, const std::string& suffix_from = "",
                     const std::string& suffix_to = "") {
  for (const auto& [name, p] : to.named_parameters()) {
    std::string source = name;
    if (!suffix_to.empty()) source = name.substr(0, name.size() - suffix_to.size());
    Shared(p).assign(from.parameter(source + suffix_from).value());
  }
}

Tensor reversed_time(const Tensor& x) { return take(x, arange(double(x.size(0) - 1), -1.0, -1.0, DType::int64), 0); }

TEST(RecurrentLayers, PyTorchNamesShapesAndInit) {
  Generator gen(1);
  const LSTM lstm(options(2, true), gen);
  const std::vector<std::string> want = {
      "weight_ih_l0", "weight_hh_l0", "bias_ih_l0", "bias_hh_l0",
      "weight_ih_l0_reverse", "weight_hh_l0_reverse", "bias_ih_l0_reverse", "bias_hh_l0_reverse",
      "weight_ih_l1", "weight_hh_l1", "bias_ih_l1", "bias_hh_l1",
      "weight_ih_l1_reverse", "weight_hh_l1_reverse", "bias_ih_l1_reverse", "bias_hh_l1_reverse"};
  ASSERT_EQ(lstm.named_parameters().size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) EXPECT_EQ(lstm.named_parameters()[i].first, want[i]);
  EXPECT_EQ(lstm.parameter("weight_ih_l0").shape(), (Shape{4 * kH, kI}));
  EXPECT_EQ(lstm.parameter("weight_ih_l1_reverse").shape(), (Shape{4 * kH, 2 * kH}));  // both directions below
  EXPECT_EQ(lstm.parameter("weight_hh_l1").shape(), (Shape{4 * kH, kH}));
  EXPECT_EQ(lstm.weights(1, 1).w_ih, lstm.parameter("weight_ih_l1_reverse"));
  const double bound = 1.0 / std::sqrt(double(kH));
  for (const auto& [name, p] : lstm.named_parameters())
    for (double v : to_vector<double>(p.value())) EXPECT_LE(std::abs(v), bound) << name;

  RecurrentOptions o = options(3);
  o.bias = false;
  const GRU gru(o, gen);
  ASSERT_EQ(gru.named_parameters().size(), 6u);
  EXPECT_EQ(gru.named_parameters()[5].first, "weight_hh_l2");
  EXPECT_EQ(gru.parameter("weight_hh_l2").shape(), (Shape{3 * kH, kH}));
  EXPECT_EQ(RNN(options(), gen).parameter("weight_hh_l0").shape(), (Shape{kH, kH}));
}

TEST(RecurrentLayers, BadOptions) {
  Generator gen(1);
  RecurrentOptions o = options();
  o.num_layers = 0;
  expect_error<ValueError>([&] { LSTM(o, gen); }, {"LSTM", "num_layers (0)"});
  o = options();
  o.dtype = DType::int64;
  expect_error<ValueError>([&] { GRU(o, gen); }, {"GRU", "int64"});
  expect_error<IndexError>([&] { LSTM(options(), gen).weights(0, 1); }, {"LSTM", "direction 1"});
}

TEST(RecurrentLayers, ArgumentErrorsNameLayerArgumentAndShapesAndRecordNothing) {
  Generator gen(2);
  const LSTM lstm(options(2, true), gen);
  const GRU gru(options(), gen);
  Tape tape;
  auto c = [&](const Shape& s, DType d = f64) { return tape.constant(zeros(s, d)); };
  const Var x = c({kT, kB, kI}), flat = c({kT, kI}), wide = c({kT, kB, kI + 1}), empty = c({0, kB, kI});
  const Var x32 = c({kT, kB, kI}, DType::float32), h_ok = c({4, kB, kH}), h_bad = c({2, kB, kH});
  expect_clean_failure<ShapeError>(tape, [&] { lstm(flat); }, {"LSTM", "'input'", "[T, B, 3]", "[4, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { lstm(wide); }, {"LSTM", "'input'", "input_size 3", "[4, 2, 4]"});
  expect_clean_failure<ShapeError>(tape, [&] { lstm(empty); }, {"LSTM", "'input'", "no time steps"});
  expect_clean_failure<DTypeError>(tape, [&] { lstm(x32); }, {"LSTM", "'input'", "float32", "float64"});
  expect_clean_failure<ShapeError>(tape, [&] { lstm(x, h_bad); }, {"LSTM", "'h0'", "[4, 2, 2]", "got [2, 2, 2]"});
  expect_clean_failure<ShapeError>(tape, [&] { lstm(x, h_ok, h_bad); }, {"LSTM", "'c0'", "[4, 2, 2]", "got [2, 2, 2]"});
  expect_clean_failure<ShapeError>(tape, [&] { gru(x, h_ok); }, {"GRU", "'h0'", "must have shape [1, 2, 2]"});
  expect_clean_failure<ValueError>(tape, [&] { gru(Var()); }, {"GRU", "'input'", "undefined"});
  EXPECT_NO_THROW(lstm(x, h_ok, h_ok));
}

TEST(RecurrentLayers, BatchFirstIsTheTransposedTimeFirstLayer) {
  Generator gen(3);
  RecurrentOptions o = options(2, true);
  const GRU time_first(o, gen);
  o.batch_first = true;
  const GRU batch_first(o, gen);
  copy_parameters(time_first, batch_first);
  const Tensor xs = normal({kT, kB, kI}, 0, 1, gen, f64), h0 = normal({4, kB, kH}, 0, 1, gen, f64);
  Tape tape;
  const Var a = tape.variable(xs), b = tape.variable(transpose(xs, 0, 1));
  const RecurrentOutput ra = time_first(a, Var(h0)), rb = batch_first(b, Var(h0));
  EXPECT_EQ(rb.output.shape(), (Shape{kB, kT, 2 * kH}));
  EXPECT_LT(max_abs_diff(transpose(rb.output.value(), 0, 1), ra.output.value()), 1e-15);
  EXPECT_LT(max_abs_diff(rb.h_n.value(), ra.h_n.value()), 1e-15);  // h_n stays [D*L, B, H]
  tape.backward(sum(ra.output * ra.output) + sum(rb.output * rb.output));
  EXPECT_LT(max_abs_diff(transpose(b.grad(), 0, 1), a.grad()), 1e-14);
}

TEST(RecurrentLayers, ReverseDirectionIsTheForwardOneOnTheReversedSequence) {
  Generator gen(4);
  const LSTM bi(options(1, true), gen);
  const LSTM forward(options(), gen), backward(options(), gen);
  copy_parameters(bi, forward);
  copy_parameters(bi, backward, "_reverse");
  const Tensor xs = normal({kT, kB, kI}, 0, 1, gen, f64), h0 = normal({2, kB, kH}, 0, 1, gen, f64);
  const Tensor c0 = normal({2, kB, kH}, 0, 1, gen, f64);
  Tape tape;
  const RecurrentOutput r = bi(Var(xs), Var(h0), Var(c0));
  const RecurrentOutput f = forward(Var(xs), Var(h0[0].view({1, kB, kH})), Var(c0[0].view({1, kB, kH})));
  const RecurrentOutput b = backward(Var(reversed_time(xs)), Var(h0[1].view({1, kB, kH})), Var(c0[1].view({1, kB, kH})));
  const std::vector<Tensor> halves = split(r.output.value(), 2, 2);
  // output[t] = [forward state after x[0..t], reverse state after x[t..T-1]].
  EXPECT_LT(max_abs_diff(halves[0], f.output.value()), 1e-15);
  EXPECT_LT(max_abs_diff(halves[1], reversed_time(b.output.value())), 1e-15);
  EXPECT_LT(max_abs_diff(r.h_n.value()[1], b.h_n.value()[0]), 1e-15);
  EXPECT_LT(max_abs_diff(r.c_n.value()[1], b.c_n.value()[0]), 1e-15);
  EXPECT_LT(max_abs_diff(r.h_n.value()[0], f.h_n.value()[0]), 1e-15);
}

TEST(RecurrentLayers, MissingStatesAreZeros) {
  Generator gen(5);
  RecurrentOptions o = options(2);
  o.nonlinearity = Nonlinearity::relu;
  const RNN rnn(o, gen);
  const LSTM lstm(options(2), gen);
  const Tensor xs = normal({kT, kB, kI}, 0, 1, gen, f64), z = zeros({2, kB, kH}, f64);
  Tape tape;
  EXPECT_EQ(max_abs_diff(rnn(Var(xs)).output.value(), rnn(Var(xs), Var(z)).output.value()), 0.0);
  const RecurrentOutput a = lstm(Var(xs)), b = lstm(Var(xs), Var(z), Var(z));
  EXPECT_EQ(max_abs_diff(a.c_n.value(), b.c_n.value()), 0.0);
  EXPECT_FALSE(rnn(Var(xs)).c_n.defined());
}

// With a checkpoint the layer runs through scan; without, through the fused op.
TEST(RecurrentLayers, CheckpointingChangesNothing) {
  Generator gen(6);
  RecurrentOptions o = options(2, true);
  const LSTM plain(o, gen);
  o.checkpoint = Checkpoint::every_k(2);
  const LSTM checkpointed(o, gen);
  copy_parameters(plain, checkpointed);
  const Tensor xs = normal({kT, kB, kI}, 0, 1, gen, f64);
  Tensor grads[2], outs[2];
  for (int k = 0; k < 2; ++k) {
    const LSTM& layer = k == 0 ? plain : checkpointed;
    Tape tape;
    const Var x = tape.variable(xs);
    const RecurrentOutput r = layer(x);
    tape.backward(sum(r.output * r.output) + sum(r.c_n));
    grads[k] = x.grad();
    outs[k] = r.output.value();
  }
  EXPECT_LT(max_abs_diff(outs[0], outs[1]), 1e-14);
  EXPECT_LT(max_abs_diff(grads[0], grads[1]), 1e-13);
  for (const auto& [name, p] : plain.named_parameters())
    EXPECT_LT(max_abs_diff(p.grad(), checkpointed.parameter(name).grad()), 1e-13) << name;
}

// The same for a GRU in both forms, two layers, both directions, truncated, from a given h0
// (the layer's fused path against its scan of cells).
TEST(RecurrentLayers, GruRunsFusedAsItsScanInBothForms) {
  Generator gen(9);
  for (bool lbr : {true, false})
    for (std::int64_t truncate : {std::int64_t{-1}, std::int64_t{3}}) {
      RecurrentOptions o = options(2, true);
      o.linear_before_reset = lbr;
      o.truncate_gradient = truncate;
      const GRU plain(o, gen);
      o.checkpoint = Checkpoint::every_k(2);
      const GRU checkpointed(o, gen);
      copy_parameters(plain, checkpointed);
      const Tensor xs = normal({kT, kB, kI}, 0, 1, gen, f64), h0s = normal({4, kB, kH}, 0, 1, gen, f64);
      Tensor outs[2], dx[2], dh0[2];
      for (int k = 0; k < 2; ++k) {
        Tape tape;
        const Var x = tape.variable(xs), h0 = tape.variable(h0s);
        const RecurrentOutput r = (k == 0 ? plain : checkpointed)(x, h0);
        tape.backward(sum(r.output * r.output) + sum(r.h_n));
        outs[k] = r.output.value();
        dx[k] = x.grad();
        dh0[k] = h0.grad();
      }
      const std::string what = std::string(lbr ? "pytorch" : "onnx") + " truncate " + std::to_string(truncate);
      EXPECT_LT(max_abs_diff(outs[0], outs[1]), 1e-14) << what;
      EXPECT_LT(max_abs_diff(dx[0], dx[1]), 1e-13) << what;
      EXPECT_LT(max_abs_diff(dh0[0], dh0[1]), 1e-13) << what;
      EXPECT_GT(max_abs_diff(dx[0], zeros_like(dx[0])), 0.0) << what;
      for (const auto& [name, p] : plain.named_parameters())
        EXPECT_LT(max_abs_diff(p.grad(), checkpointed.parameter(name).grad()), 1e-13) << what << " " << name;
    }
}

TEST(RecurrentLayers, TruncationStopsGradientsBeforeTheLastSteps) {
  Generator gen(7);
  RecurrentOptions o = options();
  o.truncate_gradient = 2;
  const GRU gru(o, gen);
  Tape tape;
  const Var x = tape.variable(normal({kT, kB, kI}, 0, 1, gen, f64));
  tape.backward(sum(gru(x).h_n));
  const Tensor g = x.grad();
  for (std::int64_t t = 0; t < kT; ++t) {
    const double norm = sum(g[t] * g[t]).item();
    if (t < kT - 2) EXPECT_EQ(norm, 0.0) << t;
    else EXPECT_GT(norm, 0.0) << t;
  }
}

}  // namespace
}  // namespace recur::nn
