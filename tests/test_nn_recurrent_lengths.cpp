// The sequence layers' `lengths` (variable-length sequences, as PyTorch's packed sequences):
// each batch element run alone on its own steps gives the batched run's outputs, final
// states and gradients; the fused path equals the scan path (checkpointed); float64
// finite differences through a stacked bidirectional layer; bad lengths. PyTorch's
// pack_padded_sequence references are in test_nn_recurrent_torch.cpp; finite differences
// of the fused op itself are rows of tests/grad_cases/recurrent.cpp.
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;
constexpr DType f64 = DType::float64;
constexpr std::int64_t kSteps = 5, kBatch = 4, kIn = 3, kHidden = 2;
const std::vector<std::int64_t> kLengths{3, 5, 0, 1};  // T and 0 included

struct Config {
  CellKind kind = CellKind::lstm;
  std::int64_t layers = 1;
  bool bidirectional = false, batch_first = false, linear_before_reset = true, checkpoint = false;
};

std::string describe(const Config& c) {
  return std::string(c.kind == CellKind::lstm ? "lstm" : (c.kind == CellKind::gru ? "gru" : "rnn")) + " layers " +
         std::to_string(c.layers) + (c.bidirectional ? " bidirectional" : "") + (c.batch_first ? " batch_first" : "") +
         (c.linear_before_reset ? "" : " onnx form") + (c.checkpoint ? " checkpointed" : "");
}

struct Layer {
  std::shared_ptr<const RecurrentLayer> module;
  std::int64_t states() const { return module->options().num_layers * module->num_directions(); }
};

Layer make_layer(const Config& c) {
  RecurrentOptions o;
  o.input_size = kIn;
  o.hidden_size = kHidden;
  o.num_layers = c.layers;
  o.bidirectional = c.bidirectional;
  o.batch_first = c.batch_first;
  o.linear_before_reset = c.linear_before_reset;
  o.dtype = f64;
  if (c.checkpoint) o.checkpoint = Checkpoint::every_k(2);
  Generator gen(7);
  if (c.kind == CellKind::lstm) return {std::make_shared<LSTM>(o, gen)};
  if (c.kind == CellKind::gru) return {std::make_shared<GRU>(o, gen)};
  return {std::make_shared<RNN>(o, gen)};
}

// The batch axis of the layer's input and output.
std::int64_t batch_axis(const Config& c) { return c.batch_first ? 0 : 1; }
std::int64_t time_axis(const Config& c) { return c.batch_first ? 1 : 0; }

struct Data {
  Tensor x, h0, c0, r, s, sc;  // r, s, sc: the loss's weights of output, h_n and c_n
};

Data random_data(const Config& c, const Layer& l) {
  Generator gen(11);
  const Shape x_shape = c.batch_first ? Shape{kBatch, kSteps, kIn} : Shape{kSteps, kBatch, kIn};
  const std::int64_t width = l.module->num_directions() * kHidden;
  const Shape out_shape = c.batch_first ? Shape{kBatch, kSteps, width} : Shape{kSteps, kBatch, width};
  const Shape state{l.states(), kBatch, kHidden};
  return {normal(x_shape, 0, 1, gen, f64), normal(state, 0, 1, gen, f64), normal(state, 0, 1, gen, f64),
          normal(out_shape, 0, 1, gen, f64),  normal(state, 0, 1, gen, f64), normal(state, 0, 1, gen, f64)};
}

struct Results {
  Tensor output, h_n, c_n, dx, dh0, dc0;
  std::vector<Tensor> dparams;
};

// loss = sum(output r) + sum(h_n s) [+ sum(c_n sc)], its value and gradients.
Results run(const Layer& l, bool lstm, const Data& d, const SequenceLengths& lengths) {
  Tape tape;
  const Var x = tape.variable(d.x), h0 = tape.variable(d.h0), c0 = lstm ? tape.variable(d.c0) : Var();
  const RecurrentOutput out = (*l.module)(x, {h0, c0}, lengths);
  Var loss = sum(out.output * Var(d.r)) + sum(out.h_n * Var(d.s));
  if (lstm) loss = loss + sum(out.c_n * Var(d.sc));
  l.module->zero_grad();
  tape.backward(loss);
  Results r{out.output.value(), out.h_n.value(), lstm ? out.c_n.value() : Tensor(), x.grad(), h0.grad(),
        lstm ? c0.grad() : Tensor(), {}};
  for (const auto& [name, p] : l.module->named_parameters()) r.dparams.push_back(p.grad().clone());
  return r;
}

// Element b's data alone: its first `length` steps (batch of 1).
Data alone(const Config& c, const Data& d, std::int64_t b, std::int64_t length) {
  auto one = [&](const Tensor& t, std::int64_t axis) { return slice(t, axis, b, b + 1); };
  auto steps = [&](const Tensor& t) { return slice(one(t, batch_axis(c)), time_axis(c), 0, length); };
  return {steps(d.x), one(d.h0, 1), one(d.c0, 1), steps(d.r), one(d.s, 1), one(d.sc, 1)};
}

void expect_near(const Tensor& a, const Tensor& b, const std::string& what) {
  ASSERT_EQ(a.shape(), b.shape()) << what;
  EXPECT_LE(max_abs_diff(a, b), 1e-12) << what;
}

void expect_zero(const Tensor& a, const std::string& what) { EXPECT_EQ(max_abs_diff(a, zeros_like(a)), 0.0) << what; }

const std::vector<Config> kConfigs{
    {.kind = CellKind::lstm},
    {.kind = CellKind::lstm, .layers = 2, .bidirectional = true},
    {.kind = CellKind::lstm, .layers = 2, .bidirectional = true, .checkpoint = true},
    {.kind = CellKind::gru, .bidirectional = true, .batch_first = true},
    {.kind = CellKind::gru, .layers = 2, .bidirectional = true, .linear_before_reset = false},
    {.kind = CellKind::gru, .bidirectional = true, .checkpoint = true},
    {.kind = CellKind::rnn, .layers = 2, .bidirectional = true, .batch_first = true},
    {.kind = CellKind::rnn, .bidirectional = true, .checkpoint = true},
};

TEST(RecurrentLengths, EachSequenceAloneEqualsTheBatchedRun) {
  for (const Config& c : kConfigs) {
    SCOPED_TRACE(describe(c));
    const bool lstm = c.kind == CellKind::lstm;
    const Layer l = make_layer(c);
    const Data d = random_data(c, l);
    const Results batched = run(l, lstm, d, kLengths);
    std::vector<Tensor> param_sum;
    for (std::int64_t b = 0; b < kBatch; ++b) {
      const std::int64_t length = kLengths[static_cast<std::size_t>(b)];
      const std::string at = "element " + std::to_string(b);
      auto mine = [&](const Tensor& t, std::int64_t axis) { return slice(t, axis, b, b + 1); };
      const Tensor out_b = mine(batched.output, batch_axis(c)), dx_b = mine(batched.dx, batch_axis(c));
      expect_zero(slice(out_b, time_axis(c), length, kSteps), at + " output past its length");
      expect_zero(slice(dx_b, time_axis(c), length, kSteps), at + " input gradient past its length");
      if (length == 0) {  // nothing runs: the initial states come out unchanged, their gradients are the loss's
        expect_near(mine(batched.h_n, 1), mine(d.h0, 1), at + " h_n");
        expect_near(mine(batched.dh0, 1), mine(d.s, 1), at + " h0's gradient");
        if (lstm) {
          expect_near(mine(batched.c_n, 1), mine(d.c0, 1), at + " c_n");
          expect_near(mine(batched.dc0, 1), mine(d.sc, 1), at + " c0's gradient");
        }
        continue;
      }
      const Results single = run(l, lstm, alone(c, d, b, length), {});
      expect_near(slice(out_b, time_axis(c), 0, length), single.output, at + " output");
      expect_near(slice(dx_b, time_axis(c), 0, length), single.dx, at + " input gradient");
      expect_near(mine(batched.h_n, 1), single.h_n, at + " h_n");
      expect_near(mine(batched.dh0, 1), single.dh0, at + " h0's gradient");
      if (lstm) {
        expect_near(mine(batched.c_n, 1), single.c_n, at + " c_n");
        expect_near(mine(batched.dc0, 1), single.dc0, at + " c0's gradient");
      }
      if (param_sum.empty()) {
        param_sum = single.dparams;
      } else {
        for (std::size_t i = 0; i < single.dparams.size(); ++i) param_sum[i] = param_sum[i] + single.dparams[i];
      }
    }
    // The parameters' gradients are the elements' summed.
    ASSERT_EQ(param_sum.size(), batched.dparams.size());
    for (std::size_t i = 0; i < param_sum.size(); ++i)
      expect_near(batched.dparams[i], param_sum[i], "parameter " + std::to_string(i));
  }
}

TEST(RecurrentLengths, FusedPathEqualsScanPath) {
  for (CellKind kind : {CellKind::rnn, CellKind::lstm, CellKind::gru}) {
    Config fused{.kind = kind, .layers = 2, .bidirectional = true};
    Config scanned = fused;
    scanned.checkpoint = true;
    SCOPED_TRACE(describe(fused));
    const bool lstm = kind == CellKind::lstm;
    const Layer a = make_layer(fused), b = make_layer(scanned);  // same seed: same weights
    const Data d = random_data(fused, a);
    const Tensor lengths = from_vector(kLengths, {kBatch});  // an int64 tensor, as PyTorch takes them
    const Results x = run(a, lstm, d, lengths), y = run(b, lstm, d, lengths);
    expect_near(x.output, y.output, "output");
    expect_near(x.h_n, y.h_n, "h_n");
    expect_near(x.dx, y.dx, "input gradient");
    expect_near(x.dh0, y.dh0, "h0's gradient");
    if (lstm) {
      expect_near(x.c_n, y.c_n, "c_n");
      expect_near(x.dc0, y.dc0, "c0's gradient");
    }
    for (std::size_t i = 0; i < x.dparams.size(); ++i) expect_near(x.dparams[i], y.dparams[i], "parameter gradient");
  }
}

TEST(RecurrentLengths, AllFullLengthsChangeNothing) {
  const Config c{.kind = CellKind::gru, .layers = 2, .bidirectional = true};
  const Layer l = make_layer(c);
  const Data d = random_data(c, l);
  const Results with = run(l, false, d, std::vector<std::int64_t>(kBatch, kSteps)), without = run(l, false, d, {});
  expect_near(with.output, without.output, "output");
  expect_near(with.dx, without.dx, "input gradient");
}

// Central differences of sum(output r) + sum(h_n s) + sum(c_n sc) against the tape's
// gradient, for the input, the initial states and every parameter.
TEST(RecurrentLengths, FiniteDifferencesThroughStackedBidirectionalLayers) {
  for (CellKind kind : {CellKind::lstm, CellKind::gru}) {
    const Config c{.kind = kind, .layers = 2, .bidirectional = true};
    SCOPED_TRACE(describe(c));
    const bool lstm = kind == CellKind::lstm;
    const Layer l = make_layer(c);
    Data d = random_data(c, l);
    const Results analytic = run(l, lstm, d, kLengths);
    auto loss = [&] {
      Tape tape;
      const RecurrentOutput out =
          (*l.module)(tape.constant(d.x), {tape.constant(d.h0), lstm ? tape.constant(d.c0) : Var()}, kLengths);
      double v = sum(out.output.value() * d.r).item<double>() + sum(out.h_n.value() * d.s).item<double>();
      if (lstm) v += sum(out.c_n.value() * d.sc).item<double>();
      return v;
    };
    // d(loss)/d(t[i]) by central differences, for every element of t (changed in place).
    auto numeric = [&](Tensor& t) {
      Tensor g = zeros_like(t);
      auto* v = t.data<double>();
      for (std::int64_t i = 0; i < t.numel(); ++i) {
        const double keep = v[i], eps = 1e-6;
        v[i] = keep + eps;
        const double up = loss();
        v[i] = keep - eps;
        const double down = loss();
        v[i] = keep;
        g.data<double>()[i] = (up - down) / (2 * eps);
      }
      return g;
    };
    EXPECT_LE(max_abs_diff(numeric(d.x), analytic.dx), 1e-7) << "input";
    EXPECT_LE(max_abs_diff(numeric(d.h0), analytic.dh0), 1e-7) << "h0";
    if (lstm) {
      EXPECT_LE(max_abs_diff(numeric(d.c0), analytic.dc0), 1e-7) << "c0";
    }
    std::size_t i = 0;
    for (const auto& [name, p] : l.module->named_parameters()) {
      Tensor value = p.value().clone();
      Shared shared(p);
      Tensor g = zeros_like(value);
      for (std::int64_t k = 0; k < value.numel(); ++k) {
        const double keep = value.data<double>()[k], eps = 1e-6;
        value.data<double>()[k] = keep + eps;
        shared.assign(value);
        const double up = loss();
        value.data<double>()[k] = keep - eps;
        shared.assign(value);
        const double down = loss();
        value.data<double>()[k] = keep;
        shared.assign(value);
        g.data<double>()[k] = (up - down) / (2 * eps);
      }
      EXPECT_LE(max_abs_diff(g, analytic.dparams[i++]), 1e-7) << name;
    }
  }
}

TEST(RecurrentLengths, BadLengthsNameLayerArgumentAndShapesAndRecordNothing) {
  Generator gen(3);
  RecurrentOptions o{.input_size = kIn, .hidden_size = kHidden, .dtype = f64};
  const LSTM lstm(o, gen);
  Tape tape;
  const Var x = tape.variable(normal({kSteps, kBatch, kIn}, 0, 1, gen, f64));
  auto call = [&](const SequenceLengths& lengths) { return [&, lengths] { lstm(x, {}, lengths); }; };
  expect_clean_failure<ShapeError>(tape, call(std::vector<std::int64_t>{1, 2, 3}),
                                   {"LSTM", "lengths", "[3]", "input", "[5, 4, 3]"});
  expect_clean_failure<ShapeError>(tape, call(zeros({2, 2}, DType::int64)), {"LSTM", "lengths", "[2, 2]", "1-D"});
  expect_clean_failure<ValueError>(tape, call(std::vector<std::int64_t>{1, 6, 3, 2}),
                                   {"LSTM", "lengths[1] = 6", "[0, 5]", "[4]"});
  expect_clean_failure<ValueError>(tape, call(std::vector<std::int64_t>{1, 2, -1, 2}),
                                   {"LSTM", "lengths[2] = -1", "[0, 5]"});
  expect_clean_failure<DTypeError>(tape, call(full({kBatch}, 2.0, f64)), {"LSTM", "'lengths'", "[4]", "float64", "int64"});
  RecurrentOptions truncated = o;
  truncated.truncate_gradient = 2;
  const GRU gru(truncated, gen);
  expect_clean_failure<ValueError>(tape, [&] { gru(x, {}, kLengths); }, {"GRU", "'lengths'", "truncate_gradient"});
  // The fused op checks the same on its own.
  const CellWeights w = lstm.weights(0).read(tape);
  const Var zero = tape.constant(zeros({kBatch, kHidden}, f64));
  expect_clean_failure<ValueError>(
      tape, [&] { fused_recurrence({.lengths = std::vector<std::int64_t>{9, 1, 1, 1}}, x, w, zero, zero); },
      {"fused_recurrence", "lengths[0] = 9"});
}

}  // namespace
}  // namespace recur::nn
