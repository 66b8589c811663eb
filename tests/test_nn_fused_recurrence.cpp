// The fused layer direction (ops/nn/fused_recurrence.hpp) against the scan of per-step ops
// it replaces (detail::scan_recurrence, itself checked against PyTorch and finite
// differences): values and every gradient in float64, for both cells, both directions,
// with and without biases, and every kind of truncation (GRU in both of its forms); a second backward through the
// same node; the bytes the tape reports; argument errors that record nothing.
// Finite-difference checks of the op are rows of tests/grad_cases/recurrent.cpp.
#include <gtest/gtest.h>

#include <recur/ops/nn/direction.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;

constexpr DType f64 = DType::float64;

struct Case {
  CellKind kind;
  Nonlinearity act;
  bool reverse, bias;
  std::int64_t truncate;
  bool linear_before_reset = true;  // GRU only
};

std::string describe(const Case& c) {
  const std::string gru = c.linear_before_reset ? "gru" : "gru onnx";
  return std::string(c.kind == CellKind::lstm  ? "lstm"
                     : c.kind == CellKind::gru ? gru
                                               : (c.act == Nonlinearity::relu ? "rnn_relu" : "rnn_tanh")) +
         (c.reverse ? " reverse" : "") + (c.bias ? "" : " no bias") + " truncate " + std::to_string(c.truncate);
}

struct Inputs {
  Tensor x, w_ih, w_hh, b_ih, b_hh, h0, c0, weight;  // weight: a random cotangent of the output
};

Inputs make_inputs(const Case& c, std::int64_t steps, std::int64_t batch, std::int64_t in, std::int64_t n,
                   Generator& gen) {
  const std::int64_t gh = (c.kind == CellKind::lstm ? 4 : (c.kind == CellKind::gru ? 3 : 1)) * n;
  Inputs v;
  v.x = normal({steps, batch, in}, 0, 1, gen, f64);
  v.w_ih = normal({gh, in}, 0, 0.5, gen, f64);
  v.w_hh = normal({gh, n}, 0, 0.5, gen, f64);
  v.b_ih = normal({gh}, 0, 0.5, gen, f64);
  v.b_hh = normal({gh}, 0, 0.5, gen, f64);
  v.h0 = normal({batch, n}, 0, 1, gen, f64);
  v.c0 = normal({batch, n}, 0, 1, gen, f64);
  v.weight = normal({steps + (c.kind == CellKind::lstm ? 1 : 0), batch, n}, 0, 1, gen, f64);
  return v;
}

struct Result {
  Tensor out;
  std::vector<Tensor> grads;  // x, w_ih, w_hh, h0, c0, b_ih, b_hh (the ones present)
};

Result run(const Case& c, const Inputs& v, bool fused) {
  Tape tape;
  std::vector<Var> leaves{tape.variable(v.x), tape.variable(v.w_ih), tape.variable(v.w_hh), tape.variable(v.h0)};
  const bool lstm = c.kind == CellKind::lstm;
  if (lstm) leaves.push_back(tape.variable(v.c0));
  if (c.bias) {
    leaves.push_back(tape.variable(v.b_ih));
    leaves.push_back(tape.variable(v.b_hh));
  }
  const CellWeights w{leaves[1], leaves[2], c.bias ? leaves[lstm ? 5 : 4] : Var(), c.bias ? leaves[lstm ? 6 : 5] : Var()};
  const FusedRecurrenceOptions o{.kind = c.kind, .nonlinearity = c.act,
                                 .linear_before_reset = c.linear_before_reset, .reverse = c.reverse,
                                 .truncate_gradient = c.truncate};
  const Var c0 = lstm ? leaves[4] : Var();
  const Var out = fused ? fused_recurrence(o, leaves[0], w, leaves[3], c0)
                        : detail::scan_recurrence(o, leaves[0], w, leaves[3], c0);
  const Var loss = sum(out * tape.constant(v.weight));
  Result r{out.value(), {}};
  for (const Var& g : grad(std::span<const Var>(&loss, 1), leaves)) r.grads.push_back(g.value());
  return r;
}

void expect_fused_matches_scan(const Case& c, std::int64_t steps, Generator& gen) {
  const Inputs v = make_inputs(c, steps, 3, 4, 3, gen);
  const Result fused = run(c, v, true), scanned = run(c, v, false);
  EXPECT_LT(max_abs_diff(fused.out, scanned.out), 1e-13) << describe(c);
  ASSERT_EQ(fused.grads.size(), scanned.grads.size());
  for (std::size_t i = 0; i < fused.grads.size(); ++i) {
    EXPECT_LT(max_abs_diff(fused.grads[i], scanned.grads[i]), 1e-12) << describe(c) << ", gradient " << i;
    if (c.truncate < 0 || c.truncate >= steps) {  // the comparison is not of zeros
      EXPECT_GT(max_abs_diff(fused.grads[i], zeros_like(fused.grads[i])), 0.0) << describe(c) << ", gradient " << i;
    }
  }
}

TEST(FusedRecurrence, MatchesTheScanOfCellsInValuesAndEveryGradient) {
  Generator gen(11);
  const std::int64_t steps = 7;  // cell states replayed in segments of 3, 3 and 1 steps
  std::vector<Case> cases;
  for (CellKind kind : {CellKind::rnn, CellKind::lstm})
    for (bool reverse : {false, true})
      for (std::int64_t truncate : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, steps, steps + 2})
        cases.push_back({kind, Nonlinearity::tanh, reverse, true, truncate});
  cases.push_back({CellKind::rnn, Nonlinearity::relu, false, true, -1});
  cases.push_back({CellKind::rnn, Nonlinearity::relu, true, false, 2});
  cases.push_back({CellKind::lstm, Nonlinearity::tanh, false, false, -1});
  cases.push_back({CellKind::lstm, Nonlinearity::tanh, true, false, 2});
  for (const Case& c : cases) expect_fused_matches_scan(c, steps, gen);
}

TEST(FusedRecurrence, GruInBothFormsMatchesTheScanOfCells) {
  Generator gen(17);
  const std::int64_t steps = 7;
  for (bool lbr : {true, false}) {
    for (bool reverse : {false, true})
      for (std::int64_t truncate : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{1}, std::int64_t{3}, steps, steps + 2})
        expect_fused_matches_scan({CellKind::gru, Nonlinearity::tanh, reverse, true, truncate, lbr}, steps, gen);
    expect_fused_matches_scan({CellKind::gru, Nonlinearity::tanh, false, false, -1, lbr}, steps, gen);
    expect_fused_matches_scan({CellKind::gru, Nonlinearity::tanh, true, false, 2, lbr}, steps, gen);
    for (bool reverse : {false, true})  // one step: h0 is the only previous state
      expect_fused_matches_scan({CellKind::gru, Nonlinearity::tanh, reverse, true, -1, lbr}, 1, gen);
  }
}

// The scan reference of ONNX's GRU form is new beside PyTorch's (whose cells the PyTorch
// fixtures check): one step by hand, h' = (1 - z) n + z h with
// n = tanh(x W_in^T + b_in + (r h) W_hn^T + b_hn).
TEST(FusedRecurrence, OnnxGruStepByHand) {
  Generator gen(18);
  const std::int64_t batch = 2, in = 3, n = 2;
  const Case c{CellKind::gru, Nonlinearity::tanh, false, true, -1, false};
  const Inputs v = make_inputs(c, 1, batch, in, n, gen);
  Tape tape;
  const CellWeights w{tape.constant(v.w_ih), tape.constant(v.w_hh), tape.constant(v.b_ih), tape.constant(v.b_hh)};
  const Tensor x0 = index(v.x, 0, 0);
  const Tensor cell = gru_cell(tape.constant(x0), tape.constant(v.h0), w, false).value();
  const Tensor fused = fused_recurrence({.kind = CellKind::gru, .linear_before_reset = false}, tape.constant(v.x), w,
                                        tape.constant(v.h0)).value();
  auto sig = [](double a) { return 1 / (1 + std::exp(-a)); };
  for (std::int64_t b = 0; b < batch; ++b) {
    auto xw = [&](std::int64_t row) {  // (x W_ih^T + b_ih)[b, row]
      double s = v.b_ih.at({row});
      for (std::int64_t k = 0; k < in; ++k) s += x0.at({b, k}) * v.w_ih.at({row, k});
      return s;
    };
    auto hw = [&](std::int64_t row, const std::vector<double>& h) {  // (h W_hh^T + b_hh)[row]
      double s = v.b_hh.at({row});
      for (std::int64_t k = 0; k < n; ++k) s += h[static_cast<std::size_t>(k)] * v.w_hh.at({row, k});
      return s;
    };
    std::vector<double> h(static_cast<std::size_t>(n)), rh(static_cast<std::size_t>(n));
    for (std::int64_t j = 0; j < n; ++j) h[static_cast<std::size_t>(j)] = v.h0.at({b, j});
    for (std::int64_t j = 0; j < n; ++j) rh[static_cast<std::size_t>(j)] = sig(xw(j) + hw(j, h)) * h[static_cast<std::size_t>(j)];
    for (std::int64_t j = 0; j < n; ++j) {
      const double z = sig(xw(n + j) + hw(n + j, h)), cand = std::tanh(xw(2 * n + j) + hw(2 * n + j, rh));
      const double want = (1 - z) * cand + z * h[static_cast<std::size_t>(j)];
      EXPECT_NEAR(cell.at({b, j}), want, 1e-14) << "b " << b << " j " << j;
      EXPECT_NEAR(fused.at({0, b, j}), want, 1e-14) << "b " << b << " j " << j;
    }
  }
}

TEST(FusedRecurrence, AnEmptyBatchGivesEmptyOutputsAndZeroWeightGradients) {
  Generator gen(14);
  const Case c{CellKind::lstm, Nonlinearity::tanh, true, true, -1};
  const Inputs v = make_inputs(c, 3, 0, 2, 2, gen);
  const Result r = run(c, v, true);
  EXPECT_EQ(r.out.shape(), (Shape{4, 0, 2}));
  EXPECT_EQ(r.grads[2].shape(), (Shape{8, 2}));  // w_hh
  EXPECT_EQ(max_abs_diff(r.grads[2], zeros({8, 2}, f64)), 0.0);
}

TEST(FusedRecurrence, TruncationByHand) {
  // One unit, w_ih = w_hh = 1, no bias: h_t = tanh(x_t + h_{t-1}). The loss is h_2.
  // d h_2 / d x_2 = 1 - h_2^2 =: a, d h_2 / d x_1 = a (1 - h_1^2) =: b, d h_2 / d x_0 = b (1 - h_0^2),
  // d h_2 / d w_hh = a h_1 + b h_0 + b (1 - h_0^2) h0 (the steps kept), and likewise for w_ih
  // with x in place of h. truncate_gradient = k keeps the last k steps; 0 keeps none.
  const double xs[3] = {0.5, -0.25, 1.0}, init = 0.2;
  double hs[3], h = init;
  for (int t = 0; t < 3; ++t) hs[t] = h = std::tanh(xs[t] + h);
  const double a = 1 - hs[2] * hs[2], b = a * (1 - hs[1] * hs[1]), c = b * (1 - hs[0] * hs[0]);
  const double dx[3] = {c, b, a}, hprev[3] = {init, hs[0], hs[1]};
  for (std::int64_t k : {-1, 0, 1, 2}) {
    Tape tape;
    const Var x = tape.variable(tensor({0.5, -0.25, 1.0}, f64).view({3, 1, 1}));
    const Var w_ih = tape.variable(ones({1, 1}, f64)), w_hh = tape.variable(ones({1, 1}, f64));
    const Var h0 = tape.variable(tensor({init}, f64).view({1, 1}));
    const Var out = fused_recurrence({.kind = CellKind::rnn, .truncate_gradient = k}, x, {w_ih, w_hh}, h0);
    for (int t = 0; t < 3; ++t) EXPECT_NEAR(out.value().at({t, 0, 0}), hs[t], 1e-15);
    tape.backward(sum(index(out, 0, 2)));
    const int kept = k < 0 ? 3 : static_cast<int>(k);
    double want_ih = 0, want_hh = 0;
    for (int t = 0; t < 3; ++t) {
      const double want = t >= 3 - kept ? dx[t] : 0.0;
      EXPECT_NEAR(x.grad().at({t, 0, 0}), want, 1e-15) << "k " << k << " t " << t;
      want_ih += want * xs[t];
      want_hh += want * hprev[t];
    }
    EXPECT_NEAR(w_ih.grad().item(), want_ih, 1e-15) << "k " << k;
    EXPECT_NEAR(w_hh.grad().item(), want_hh, 1e-15) << "k " << k;
    EXPECT_NEAR(h0.grad().item(), kept == 3 ? c : 0.0, 1e-15) << "k " << k;
  }
}

// Under create_graph the gradient is recorded through the scan of cells; its value must be
// the plain backward's, also when the upstream gradient depends on the output itself.
TEST(FusedRecurrence, RecordedGradientEqualsThePlainOne) {
  Generator gen(16);
  for (const Case& c : {Case{CellKind::lstm, Nonlinearity::tanh, false, true, -1},
                        Case{CellKind::rnn, Nonlinearity::tanh, true, true, 2},
                        Case{CellKind::gru, Nonlinearity::tanh, false, true, -1, true},
                        Case{CellKind::gru, Nonlinearity::tanh, true, true, 3, false}}) {
    const Inputs v = make_inputs(c, 4, 2, 3, 2, gen);
    Tensor plain, recorded;
    for (bool create_graph : {false, true}) {
      Tape tape;
      const Var w_hh = tape.variable(v.w_hh), x = tape.constant(v.x), h0 = tape.constant(v.h0);
      const Var w_ih = tape.constant(v.w_ih), c0 = c.kind == CellKind::lstm ? tape.constant(v.c0) : Var();
      const FusedRecurrenceOptions o{.kind = c.kind, .linear_before_reset = c.linear_before_reset,
                                     .reverse = c.reverse, .truncate_gradient = c.truncate};
      const Var out = fused_recurrence(o, x, {w_ih, w_hh}, h0, c0);
      const Var loss = sum(out * out);
      (create_graph ? recorded : plain) = grad(loss, w_hh, {.create_graph = create_graph}).value();
    }
    EXPECT_LT(max_abs_diff(plain, recorded), 1e-13) << describe(c);
  }
}

// fused_recurrence_split: the LSTM's final cell state as a second output of the op
// (autodiff/record.hpp's record_outputs) gives the packed result's values and, whichever
// outputs the loss reads, the same gradients bit for bit, plain and recorded.
TEST(FusedRecurrence, SplitOutputsMatchThePackedResult) {
  Generator gen(17);
  const std::int64_t steps = 5;
  const Case c{CellKind::lstm, Nonlinearity::tanh, false, true, -1};
  const Inputs v = make_inputs(c, steps, 3, 2, 3, gen);
  const Tensor zero_rows = zeros({steps, 3, 3}, f64), zero_row = zeros({3, 3}, f64);
  for (bool reverse : {false, true})
    for (int reads : {0, 1, 2}) {  // the outputs and c_n, the outputs only, c_n only
      const std::string what = std::string(reverse ? "reverse, " : "") + "reads " + std::to_string(reads);
      // The packed weight's rows 0..T-1 weigh the outputs, row T c_n; unread ones are zero.
      const Tensor w_rows = reads == 2 ? zero_rows : slice(v.weight, 0, 0, steps);
      const Tensor w_cell = reads == 1 ? zero_row : index(v.weight, 0, steps);
      const Tensor weight = concat({w_rows, unsqueeze(w_cell, 0)}, 0);
      std::vector<Tensor> grads[2];
      for (bool create_graph : {false, true})
        for (bool split : {false, true}) {
          Tape tape;
          const Var x = tape.variable(v.x), w_hh = tape.variable(v.w_hh), c0 = tape.variable(v.c0);
          const CellWeights w{tape.variable(v.w_ih), w_hh, tape.constant(v.b_ih), tape.constant(v.b_hh)};
          const FusedRecurrenceOptions o{.reverse = reverse, .lengths = std::vector<std::int64_t>{5, 2, 4}};
          const Var h0 = tape.constant(v.h0);
          Var loss;
          if (split) {
            const FusedOutputs r = fused_recurrence_split(o, x, w, h0, c0);
            const Var packed = fused_recurrence(o, tape.constant(v.x), w, h0, c0);  // values only
            EXPECT_EQ(max_abs_diff(r.outputs.value(), slice(packed.value(), 0, 0, steps)), 0.0) << what;
            EXPECT_EQ(max_abs_diff(r.c_n.value(), index(packed.value(), 0, steps)), 0.0) << what;
            const Var on_outputs = sum(r.outputs * tape.constant(w_rows)), on_cell = sum(r.c_n * tape.constant(w_cell));
            loss = reads == 0 ? on_outputs + on_cell : (reads == 1 ? on_outputs : on_cell);
          } else {
            loss = sum(fused_recurrence(o, x, w, h0, c0) * tape.constant(weight));
          }
          std::vector<Tensor> g;
          for (const Var& d : grad(std::span<const Var>(&loss, 1), std::vector<Var>{x, w_hh, c0},
                                   {}, {.create_graph = create_graph}))
            g.push_back(d.value());
          if (!split) {
            grads[create_graph] = g;
            continue;
          }
          for (std::size_t i = 0; i < g.size(); ++i) {
            EXPECT_GT(max_abs_diff(g[i], zeros_like(g[i])), 0.0) << what << ", gradient " << i;
            // The recorded backward differentiates the scan of cells: equal to rounding.
            EXPECT_LE(max_abs_diff(g[i], grads[create_graph][i]), create_graph ? 1e-13 : 0.0)
                << what << ", gradient " << i;
          }
        }
    }
}

// The cell state's node hands its gradient to the op's rule: it is a gradient grad() can
// ask for, and a backward that ran the rule consumed it for a later backward from c_n.
TEST(FusedRecurrence, SplitCellStateIsAnOutputOfTheSameNode) {
  Generator gen(18);
  const Inputs v = make_inputs({CellKind::lstm, Nonlinearity::tanh, false, false, -1}, 3, 2, 2, 2, gen);
  Tape tape;
  const Var w_hh = tape.variable(v.w_hh);
  const FusedOutputs r =
      fused_recurrence_split({}, tape.constant(v.x), {tape.constant(v.w_ih), w_hh}, tape.constant(v.h0),
                             tape.constant(v.c0));
  const Var loss = sum(r.c_n * 3.0) + sum(r.outputs);
  EXPECT_EQ(max_abs_diff(grad(loss, r.c_n).value(), full({2, 2}, 3.0, f64)), 0.0);
  tape.backward(loss);
  EXPECT_GT(max_abs_diff(w_hh.grad(), zeros_like(w_hh.grad())), 0.0);
  EXPECT_THROW(tape.backward(sum(r.c_n)), GradientError);
  {
    NoGrad off;
    const FusedOutputs constant = fused_recurrence_split({}, tape.constant(v.x), {tape.constant(v.w_ih), w_hh},
                                                         tape.constant(v.h0), tape.constant(v.c0));
    EXPECT_EQ(max_abs_diff(constant.c_n.value(), r.c_n.value()), 0.0);
  }
}

TEST(FusedRecurrence, SecondBackwardThroughTheSameNodeRecomputes) {
  Generator gen(12);
  for (const Case& c : {Case{CellKind::lstm, Nonlinearity::tanh, false, true, -1},
                        Case{CellKind::gru, Nonlinearity::tanh, false, true, -1, true},
                        Case{CellKind::gru, Nonlinearity::tanh, true, true, -1, false}}) {
    const Inputs v = make_inputs(c, 4, 2, 3, 2, gen);
    Tape tape;
    const Var x = tape.variable(v.x), w_ih = tape.variable(v.w_ih), w_hh = tape.variable(v.w_hh);
    const Var h0 = tape.constant(v.h0), c0 = tape.constant(v.c0);
    const FusedRecurrenceOptions o{.kind = c.kind, .linear_before_reset = c.linear_before_reset, .reverse = c.reverse};
    const Var out = fused_recurrence(o, x, {w_ih, w_hh, tape.constant(v.b_ih), tape.constant(v.b_hh)}, h0, c0);
    const Var loss = sum(out * tape.constant(v.weight));
    const std::vector<Var> first = grad(std::span<const Var>(&loss, 1), std::vector<Var>{x, w_hh});
    const std::vector<Var> second = grad(std::span<const Var>(&loss, 1), std::vector<Var>{x, w_hh});
    EXPECT_EQ(max_abs_diff(first[0].value(), second[0].value()), 0.0) << describe(c);
    EXPECT_EQ(max_abs_diff(first[1].value(), second[1].value()), 0.0) << describe(c);
  }
}

TEST(FusedRecurrence, TapeCountsTheSavedActivationsAndCells) {
  // An LSTM direction holds its output [T+1, B, H], the activations [T, B, 4H] and the cell
  // states entering each replay segment after the first: T = 6 has segments of
  // ceil(sqrt(6)) = 3 steps, so one [B, H] checkpoint.
  const std::int64_t steps = 6, batch = 2, in = 3, n = 4;
  Generator gen(13);
  const Case c{CellKind::lstm, Nonlinearity::tanh, false, false, -1};
  const Inputs v = make_inputs(c, steps, batch, in, n, gen);
  Tape tape;
  const Var x = tape.constant(v.x), h0 = tape.constant(v.h0), c0 = tape.constant(v.c0);
  const Var w_ih = tape.variable(v.w_ih), w_hh = tape.variable(v.w_hh);
  const std::size_t inputs = tape.bytes_held();
  const Var out = fused_recurrence({}, x, {w_ih, w_hh}, h0, c0);
  const std::size_t held = tape.bytes_held() - inputs;
  const std::size_t wanted = (steps + 1) * batch * n + steps * batch * (4 * n) + batch * n;
  // The buffer pool rounds sizes up to its size classes: at least the elements, less than twice.
  EXPECT_GE(held, wanted * sizeof(double));
  EXPECT_LT(held, 2 * wanted * sizeof(double));
  tape.backward(sum(out));  // the activations become gate gradients and are dropped
  EXPECT_LT(tape.bytes_held() - inputs, held);
}

// A fused LSTM inside a checkpointed scan: releasing a segment drops the op's saved
// activations too (the replay makes them again), and the gradients do not change.
TEST(FusedRecurrence, InsideACheckpointedScanReleasesItsSavedTensors) {
  Generator gen(15);
  const Tensor xs = normal({6, 5, 2, 3}, 0, 1, gen, f64);  // 6 outer steps of [5 inner steps, B 2, I 3]
  const Tensor w_ih = normal({8, 3}, 0, 0.5, gen, f64), w_hh = normal({8, 2}, 0, 0.5, gen, f64);
  struct Run {
    std::size_t held;
    Tensor d_ih, d_hh, dx;
  };
  auto run = [&](Checkpoint checkpoint) {
    Tape tape;
    const Var x = tape.variable(xs), a = tape.variable(w_ih), b = tape.variable(w_hh);
    const Var zero = tape.constant(zeros({2, 2}, f64));
    auto r = scan([](std::span<const Var> v) -> StepResult {
      const Var out = fused_recurrence({}, v[0], {v[3], v[4]}, v[1], v[2]);
      return {index(out, 0, 4), index(out, 0, 5)};
    }, {.sequences = {x}, .outputs_info = {zero, zero}, .non_sequences = {a, b}, .checkpoint = checkpoint});
    const Var loss = sum(r[0] * r[0]) + sum(r[1]);
    Run out{tape.bytes_held(), {}, {}, {}};
    tape.backward(loss);
    out.d_ih = a.grad();
    out.d_hh = b.grad();
    out.dx = x.grad();
    return out;
  };
  const Run full = run(Checkpoint::none()), released = run(Checkpoint::every_k(2));
  EXPECT_LT(released.held, full.held / 2);
  // create_graph through the same scan: the op's recorded backward runs a pass of its own
  // inside the outer one, whose segment values must be there again after it.
  auto recorded = [&](Checkpoint checkpoint) {
    Tape tape;
    const Var x = tape.variable(xs), a = tape.variable(w_ih), b = tape.variable(w_hh);
    const Var zero = tape.constant(zeros({2, 2}, f64));
    auto r = scan([](std::span<const Var> v) -> StepResult {
      const Var out = fused_recurrence({}, v[0] * 1.5, {v[3], v[4]}, v[1], v[2]);
      return {index(out, 0, 4), index(out, 0, 5)};
    }, {.sequences = {x}, .outputs_info = {zero, zero}, .non_sequences = {a, b}, .checkpoint = checkpoint});
    const Var loss = sum(r[0] * r[0]) + sum(r[1]);
    return grad(loss, b, {.create_graph = true}).value();
  };
  EXPECT_LT(max_abs_diff(recorded(Checkpoint::none()), recorded(Checkpoint::every_k(2))), 1e-13);
  EXPECT_EQ(max_abs_diff(full.d_ih, released.d_ih), 0.0);
  EXPECT_EQ(max_abs_diff(full.d_hh, released.d_hh), 0.0);
  EXPECT_EQ(max_abs_diff(full.dx, released.dx), 0.0);
}

TEST(FusedRecurrence, BadArgumentsNameTheShapesAndRecordNothing) {
  Tape tape;
  const Var x = tape.variable(zeros({3, 2, 4}, f64)), h0 = tape.variable(zeros({2, 5}, f64));
  const Var w_ih = tape.variable(zeros({20, 4}, f64)), w_hh = tape.variable(zeros({20, 5}, f64));
  const Var narrow = tape.constant(zeros({2, 4}, f64)), no_steps = tape.constant(zeros({0, 2, 4}, f64));
  const Var single = tape.constant(zeros({2, 5}));
  expect_clean_failure<ShapeError>(tape, [&] { fused_recurrence({}, x, {w_ih, w_hh}, h0, narrow); },
                                   {"fused_recurrence", "'c0' [2, 4]", "'h0' [2, 5]"});
  expect_clean_failure<ShapeError>(tape, [&] { fused_recurrence({.kind = CellKind::rnn}, x, {w_ih, w_hh}, h0); },
                                   {"fused_recurrence", "'w_ih' [20, 4]", "w_ih [1*H, I]"});
  expect_clean_failure<ShapeError>(
      tape, [&] { fused_recurrence({}, no_steps, {w_ih, w_hh}, h0, h0); }, {"'x' [0, 2, 4]"});
  expect_clean_failure<DTypeError>(
      tape, [&] { fused_recurrence({}, x, {w_ih, w_hh}, h0, single); }, {"float64", "float32"});
  expect_clean_failure<ShapeError>(tape, [&] { fused_recurrence({.kind = CellKind::gru}, x, {w_ih, w_hh}, h0); },
                                   {"fused_recurrence", "'w_ih' [20, 4]", "w_ih [3*H, I]"});
  const Var w_ih3 = tape.variable(zeros({15, 4}, f64)), w_hh3 = tape.variable(zeros({15, 5}, f64));
  const Var short_bias = tape.variable(zeros({10}, f64));
  for (bool lbr : {true, false}) {
    const FusedRecurrenceOptions o{.kind = CellKind::gru, .linear_before_reset = lbr};
    expect_clean_failure<ShapeError>(tape, [&] { fused_recurrence(o, x, {w_ih3, w_hh3, short_bias}, h0); },
                                     {"fused_recurrence", "'b_ih' [10]", "biases [3*H]"});
    expect_clean_failure<ShapeError>(tape, [&] { fused_recurrence(o, x, {w_ih3, w_hh3}, narrow); },
                                     {"fused_recurrence", "'h0' [2, 4]"});
    EXPECT_EQ(fused_recurrence(o, x, {w_ih3, w_hh3}, h0).shape(), (Shape{3, 2, 5}));
  }
}

}  // namespace
}  // namespace recur::nn
