#pragma once
// Cells written with recur's ops for the capture tests (test_scan_capture.cpp): each cell's
// scan, its inputs (the same values every time), and the same cell in a plain loop of the
// same ops (no scan at all) as the independent reference.
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <recur/recur.hpp>

namespace recur::capture_cells {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

inline Tensor init(std::uint64_t seed, const Shape& shape, double scale = 0.5) {
  Generator gen(seed);
  return uniform(shape, -scale, scale, gen, f64);
}

// One cell's scan: its parameters, initial states and xs, the step, and the loss.
struct CellCase {
  std::string name;
  std::vector<Shape> parameters;
  std::vector<Shape> states;  // fed back, tap -1
  Shape xs;                   // [T, B, I]
  StepFn step;                // (x_t, states..., parameters...)
};

struct CellRun {
  Tensor loss;
  std::vector<Tensor> outputs, grads;  // grads: parameters, then states, then xs
  StepCapture capture;
};

// A cell's inputs on `tape`, the same values every time: variables, or constants where
// asked (the parameters and states, the sequence).
struct CellInputs {
  std::vector<Var> params, states;
  Var xs;
};
inline CellInputs make_inputs(Tape& tape, const CellCase& c, bool constant_weights = false, bool constant_xs = false) {
  auto make = [&](bool constant, Tensor t) { return constant ? tape.constant(std::move(t)) : tape.variable(std::move(t)); };
  CellInputs in;
  std::uint64_t seed = 1;
  for (const Shape& s : c.parameters) in.params.push_back(make(constant_weights, init(seed++, s)));
  for (const Shape& s : c.states) in.states.push_back(make(constant_weights, init(seed++, s)));
  in.xs = make(constant_xs, init(seed++, c.xs, 1.0));
  return in;
}

// The cell's scan over `in`: xs the sequence, the states fed back, the parameters as
// non-sequences; `o` gives the other options.
inline ScanResult scan_cell(const CellCase& c, const CellInputs& in, Capture capture, ScanOptions o = {}) {
  o.sequences = {in.xs};
  o.outputs_info.assign(in.states.begin(), in.states.end());
  o.non_sequences = in.params;
  o.capture = capture;
  return scan(c.step, o);
}

inline CellRun run_cell(const CellCase& c, Capture capture, ScanOptions extra = {}) {
  Tape tape;
  const CellInputs in = make_inputs(tape, c);
  const auto& [params, states, xs] = in;
  const ScanResult r = scan_cell(c, in, capture, std::move(extra));
  Var loss = tape.constant(scalar(0.0, f64));
  for (const Var& out : r.outputs) loss = loss + sum(out * out * out);
  CellRun run{loss.value(), {}, {}, r.capture};
  for (const Var& out : r.outputs) run.outputs.push_back(out.value());
  tape.backward(loss);
  for (const Var& p : params) run.grads.push_back(p.grad());
  for (const Var& s : states) run.grads.push_back(s.grad());
  run.grads.push_back(xs.grad());
  return run;
}

// ---- cells -----------------------------------------------------------------------------
// Parameters come after x_t and the states; weights multiply from the right ([in, out]).

// LSTM, one product per operand for all four gates (i, f, g, o).
inline StepResult lstm_merged(S a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  const std::vector<Var> g = split(matmul(x, a[3]) + matmul(h, a[4]) + a[5], 1, 4);
  const Var c_next = sigmoid(g[1]) * c + sigmoid(g[0]) * tanh(g[2]);
  return {sigmoid(g[3]) * tanh(c_next), c_next};
}

// LSTM with one weight per gate (the DeepLearning.net tutorial's form): W_x, U_h, b per gate.
inline StepResult lstm_per_gate(S a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  auto pre = [&](int k) { return matmul(x, a[3 + 3 * k]) + matmul(h, a[4 + 3 * k]) + a[5 + 3 * k]; };
  const Var c_next = sigmoid(pre(1)) * c + sigmoid(pre(0)) * tanh(pre(2));
  return {sigmoid(pre(3)) * tanh(c_next), c_next};
}

// Peephole LSTM (Gers and Schmidhuber): the gates also read the cell state through
// diagonal weights p_i, p_f (c_{t-1}) and p_o (c_t). Parameters: Wx, Wh, b, p_i, p_f, p_o.
inline StepResult lstm_peephole(S a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  const std::vector<Var> g = split(matmul(x, a[3]) + matmul(h, a[4]) + a[5], 1, 4);
  const Var i = sigmoid(g[0] + a[6] * c), f = sigmoid(g[1] + a[7] * c);
  const Var c_next = f * c + i * tanh(g[2]);
  return {sigmoid(g[3] + a[8] * c_next) * tanh(c_next), c_next};
}

// PyTorch's GRU written by hand: r resets the hidden product after it is taken.
// Parameters: W_ih [I, 3H], W_hh [H, 3H], b_ih, b_hh.
inline StepResult gru_by_hand(S a) {
  const Var &x = a[0], &h = a[1];
  const std::vector<Var> gx = split(matmul(x, a[2]) + a[4], 1, 3);
  const std::vector<Var> gh = split(matmul(h, a[3]) + a[5], 1, 3);
  const Var r = sigmoid(gx[0] + gh[0]), z = sigmoid(gx[1] + gh[1]);
  const Var n = tanh(gx[2] + r * gh[2]);
  return {n + z * (h - n)};
}

// Two stacked tanh layers in one step: h1' = tanh(x W1 + h1 U1 + b1), h2' = tanh(h1' W2 + h2 U2 + b2).
inline StepResult two_layers(S a) {
  const Var h1 = tanh(matmul(a[0], a[3]) + matmul(a[1], a[4]) + a[5]);
  const Var h2 = tanh(matmul(h1, a[6]) + matmul(a[2], a[7]) + a[8]);
  return {h1, h2};
}

// Every op a chain fuses, on the columns of one merged product: the chain reads them in
// place, row by row, and writes their gradients there. Parameters: Wx [I, 4H], Wh [H, 4H], b [4H].
inline StepResult every_chain_op(S a) {
  const Var &x = a[0], &h = a[1];
  const std::vector<Var> g = split(matmul(x, a[2]) + matmul(h, a[3]) + a[4], 1, 4);
  const Var u = relu(g[0]) / exp(-g[1]) - sigmoid(g[2]) * h;
  return {tanh(u) + g[3] / exp(g[3])};
}

// Sums whose gradients the chain's backward hands on without copies (a tree of sums, a
// difference's first operand, a bias), beside what must not be handed on: a difference's
// second operand, a value read twice, an operand added to itself, and an output the chain
// reads again. Parameters: Wx [I, 4H], Wh [H, 4H], b [4H].
inline StepResult sums_in_a_chain(S a) {
  const Var &x = a[0], &h = a[1], &k = a[2];
  const std::vector<Var> g = split(matmul(x, a[3]) + matmul(h, a[4]) + a[5], 1, 4);
  const Var s = (g[0] + g[1]) + (g[2] - tanh(k));
  const Var t = tanh(s * sigmoid(s) + sigmoid(g[3] + g[3]));
  return {t, tanh(t + k)};
}

// One-operand ops whose gradient the chain's backward hands on in the same pass as their
// reader's rule (ChainProgram::folded): exp under a product, relu of a negation, tanh of a
// sigmoid; beside ones it must not fold: swish's sigmoid, whose reader also reads its operand,
// and an op read by a folded one. Parameters: Wx [I, 4H], Wh [H, 4H], b [4H].
inline StepResult unary_rules_in_a_chain(S a) {
  const Var &x = a[0], &h = a[1];
  const std::vector<Var> g = split(matmul(x, a[2]) + matmul(h, a[3]) + a[4], 1, 4);
  const Var s = g[0] * h;
  const Var u = s * sigmoid(s) + tanh(sigmoid(g[1])) * h + relu(-g[2]) * exp(g[3]);
  return {tanh(u)};
}

constexpr std::int64_t kT = 7, kB = 3, kI = 4, kH = 5;

inline std::vector<CellCase> cells() {
  std::vector<Shape> per_gate;
  for (int k = 0; k < 4; ++k) per_gate.insert(per_gate.end(), {{kI, kH}, {kH, kH}, {kH}});
  return {
      {"lstm_merged", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{kB, kH}, {kB, kH}}, {kT, kB, kI}, lstm_merged},
      {"lstm_per_gate", per_gate, {{kB, kH}, {kB, kH}}, {kT, kB, kI}, lstm_per_gate},
      {"lstm_peephole", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}, {kH}, {kH}, {kH}}, {{kB, kH}, {kB, kH}}, {kT, kB, kI},
       lstm_peephole},
      {"gru_by_hand", {{kI, 3 * kH}, {kH, 3 * kH}, {3 * kH}, {3 * kH}}, {{kB, kH}}, {kT, kB, kI}, gru_by_hand},
      {"two_layers", {{kI, kH}, {kH, kH}, {kH}, {kH, kH}, {kH, kH}, {kH}}, {{kB, kH}, {kB, kH}}, {kT, kB, kI},
       two_layers},
  };
}

// The same cell in a plain loop of the same ops: no scan at all.
inline CellRun unrolled(const CellCase& c) {
  Tape tape;
  const auto [params, states, xs] = make_inputs(tape, c);
  std::vector<Var> carry = states;
  std::vector<std::vector<Var>> stacked(states.size());
  for (std::int64_t t = 0; t < c.xs[0]; ++t) {
    std::vector<Var> args{index(xs, 0, t)};
    args.insert(args.end(), carry.begin(), carry.end());
    args.insert(args.end(), params.begin(), params.end());
    carry = c.step(S(args)).outputs;
    for (std::size_t j = 0; j < carry.size(); ++j) stacked[j].push_back(carry[j]);
  }
  Var loss = tape.constant(scalar(0.0, f64));
  CellRun run;
  for (const auto& outs : stacked) {
    const Var out = stack(std::span<const Var>(outs));
    run.outputs.push_back(out.value());
    loss = loss + sum(out * out * out);
  }
  run.loss = loss.value();
  tape.backward(loss);
  for (const Var& p : params) run.grads.push_back(p.grad());
  for (const Var& s : states) run.grads.push_back(s.grad());
  run.grads.push_back(xs.grad());
  return run;
}

}  // namespace recur::capture_cells
