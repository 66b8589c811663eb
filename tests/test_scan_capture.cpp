// Captured steps (ops/scan/step_program_detail.hpp): which scans capture, why the others do
// not, and cells beyond the fused three whose values and gradients, captured, equal the
// step recorded at every call (Capture::off) bit for bit, and a hand-unrolled loop of the
// same ops.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include "values.hpp"

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

Tensor init(std::uint64_t seed, const Shape& shape, double scale = 0.5) {
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

CellRun run_cell(const CellCase& c, Capture capture, ScanOptions extra = {}) {
  Tape tape;
  std::vector<Var> params, states;
  std::uint64_t seed = 1;
  for (const Shape& s : c.parameters) params.push_back(tape.variable(init(seed++, s)));
  for (const Shape& s : c.states) states.push_back(tape.variable(init(seed++, s)));
  const Var xs = tape.variable(init(seed++, c.xs, 1.0));
  ScanOptions o = std::move(extra);
  o.sequences = {xs};
  o.outputs_info.assign(states.begin(), states.end());
  o.non_sequences = params;
  o.capture = capture;
  const ScanResult r = scan(c.step, o);
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

StepResult lstm_merged(S a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  const std::vector<Var> g = split(matmul(x, a[3]) + matmul(h, a[4]) + a[5], 1, 4);
  const Var c_next = sigmoid(g[1]) * c + sigmoid(g[0]) * tanh(g[2]);
  return {sigmoid(g[3]) * tanh(c_next), c_next};
}

TEST(ScanCapture, Debug) {
  const CellCase c{"lstm", {{3, 8}, {2, 8}, {8}}, {{4, 2}, {4, 2}}, {5, 4, 3}, lstm_merged};
  const CellRun r = run_cell(c, Capture::automatic);
  EXPECT_TRUE(r.capture.captured) << r.capture.reason;
}

}  // namespace
}  // namespace recur
