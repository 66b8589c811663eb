// A chain whose elements fit one block runs its compiled list of kernel calls
// (ops/scan/elementwise_chain_compiled_detail.hpp) instead of the interpreter: the same
// kernels in the same order, so the same bits. Each test runs the same chain both ways and
// asks which way ran (chain::compiled_runs).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/step_program_detail.hpp>

#include "scan_capture_cells.hpp"
#include "values.hpp"

namespace recur {
namespace {

using namespace capture_cells;
using scan_engine::detail::ChainCode;
using scan_engine::detail::ChainProgram;
namespace chain = scan_engine::detail::chain;

// Compiled chains on or off for one scope, then on again (the process's default).
struct CompiledChains {
  explicit CompiledChains(bool on) { chain::set_compiled_chains(on); }
  ~CompiledChains() { chain::set_compiled_chains(true); }
  CompiledChains(const CompiledChains&) = delete;
  CompiledChains& operator=(const CompiledChains&) = delete;
};

void expect_same_bytes(const std::vector<Tensor>& got, const std::vector<Tensor>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (std::size_t k = 0; k < want.size(); ++k) {
    ASSERT_EQ(got[k].defined(), want[k].defined()) << what << ", tensor " << k;
    if (want[k].defined()) {
      EXPECT_TRUE(testing::same_bytes(got[k], want[k])) << what << ", tensor " << k;
    }
  }
}

// Every capture cell and the chains' own cells (every op a chain fuses, sums handed on, folded
// one-operand rules), at a batch of one (each chain one row of its gates) and of three (its
// gates read row by row in place): a captured scan's outputs and every gradient.
TEST(ChainCompiled, CapturedCellsGiveTheInterpretersBits) {
  std::vector<CellCase> cases;
  for (const CellCase& c : cells())
    if (c.name != "two_layers") cases.push_back(c);  // its tanh layers are one op each: no chain
  for (const std::int64_t b : {std::int64_t{1}, kB}) {
    const std::string at = " at B" + std::to_string(b);
    cases.push_back({"every_chain_op" + at, {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{b, kH}}, {4, b, kI},
                     every_chain_op});
    cases.push_back({"sums_in_a_chain" + at, {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{b, kH}, {b, kH}}, {4, b, kI},
                     sums_in_a_chain});
    cases.push_back({"unary_rules_in_a_chain" + at, {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{b, kH}}, {4, b, kI},
                     unary_rules_in_a_chain});
  }
  cases.push_back({"lstm_merged at B1", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{1, kH}, {1, kH}}, {kT, 1, kI},
                   lstm_merged});
  for (const CellCase& c : cases) {
    CellRun interpreted, compiled;
    {
      const CompiledChains off(false);
      const std::uint64_t before = chain::compiled_runs();
      interpreted = run_cell(c, Capture::required);
      EXPECT_EQ(chain::compiled_runs(), before) << c.name;
    }
    const std::uint64_t before = chain::compiled_runs();
    compiled = run_cell(c, Capture::required);
    EXPECT_TRUE(compiled.capture.captured) << c.name << ": " << compiled.capture.reason;
    EXPECT_GE(compiled.capture.fused_chains, 1) << c.name;
    // A forward and a backward per step and chain at least.
    EXPECT_GE(chain::compiled_runs() - before, static_cast<std::uint64_t>(2 * c.xs[0])) << c.name;
    EXPECT_TRUE(testing::same_bytes(compiled.loss, interpreted.loss)) << c.name;
    expect_same_bytes(compiled.outputs, interpreted.outputs, c.name + ": outputs");
    expect_same_bytes(compiled.grads, interpreted.grads, c.name + ": gradients");
  }
}

// y0 = tanh(x[:, :3] * x[:, 3:] + c) and, reading y0's operand again, y1 = the chain's every
// other op: sigmoid, sub, div, exp, neg, relu, mul. Over [4, 3]; x [4, 6] gives each row its
// gates (read in place row by row), x [1, 6] one row for every row (a block-sized copy, its
// gradient summed over the rows); c whole [4, 3], broadcast [3] or one element [1] (its
// gradient sums every repeat).
std::shared_ptr<ChainProgram> gates_and_every_op() {
  auto p = std::make_shared<ChainProgram>();
  using O = scan_engine::detail::ChainOperand;
  const O x0{true, 0}, x1{true, 1}, c{true, 2};
  auto v = [](std::uint16_t k) { return O{false, k}; };
  p->slots = {{0, 0}, {0, 3}, {1, -1}};
  p->code = {{ChainCode::mul, x0, x1},         {ChainCode::add, v(0), c},       {ChainCode::tanh, v(1), {}},
             {ChainCode::sigmoid, v(1), {}},   {ChainCode::sub, v(3), v(2)},    {ChainCode::div, v(4), x1},
             {ChainCode::exp, v(5), {}},       {ChainCode::neg, v(4), {}},      {ChainCode::relu, v(7), {}},
             {ChainCode::mul, v(6), v(8)}};
  p->outputs = {2, 9};
  p->shape = {4, 3};
  return p;
}

struct ProgramRun {
  std::vector<Tensor> values;  // the outputs, then the gradients of x and c (where taken)
};

// The chain on x and c, with the gradient of sum(y0 w0) and, with `both`, of sum(y1 w1).
ProgramRun run_program(const detail::OpBox& op, DType dtype, const Shape& x_shape, const Shape& c_shape,
                       bool c_wants_gradient, bool both) {
  Generator gen(5);
  Tape tape;
  const Var x = tape.variable(uniform(x_shape, 0.5, 1.5, gen, dtype));
  const Tensor c_value = uniform(c_shape, -1, 1, gen, dtype);
  const Var c = c_wants_gradient ? tape.variable(c_value) : tape.constant(c_value);
  const std::vector<Var> y = scan_engine::detail::record_program_op_outputs(tape, op, {x, c});
  Var loss = sum(y[0] * tape.constant(uniform({4, 3}, -1, 1, gen, dtype)));
  if (both) loss = loss + sum(y[1] * tape.constant(uniform({4, 3}, -1, 1, gen, dtype)));
  tape.backward(loss);
  return {{y[0].value(), y[1].value(), x.grad(), c_wants_gradient ? c.grad() : Tensor()}};
}

TEST(ChainCompiled, EveryInputFormAndOpGivesTheInterpretersBits) {
  const detail::OpBox op = scan_engine::detail::elementwise_chain_op(gates_and_every_op());
  for (const DType dtype : {DType::float64, DType::float32})
    for (const Shape& x_shape : {Shape{4, 6}, Shape{1, 6}})
      for (const Shape& c_shape : {Shape{4, 3}, Shape{3}, Shape{1}})
        for (const bool c_wants : {true, false})
          for (const bool both : {true, false}) {
            const std::string what = to_string(x_shape) + " " + to_string(c_shape) + (c_wants ? " c variable" : "") +
                                     (both ? " both outputs" : " the first output") + " " + std::string(name_of(dtype));
            ProgramRun interpreted;
            {
              const CompiledChains off(false);
              interpreted = run_program(op, dtype, x_shape, c_shape, c_wants, both);
            }
            const std::uint64_t before = chain::compiled_runs();
            const ProgramRun compiled = run_program(op, dtype, x_shape, c_shape, c_wants, both);
            EXPECT_EQ(chain::compiled_runs() - before, 2U) << what;  // its forward and its backward
            expect_same_bytes(compiled.values, interpreted.values, what);
          }
}

// More elements than one block (about 2048): the interpreter runs it, as before.
TEST(ChainCompiled, AChainOfSeveralBlocksRunsInterpreted) {
  auto p = std::make_shared<ChainProgram>();
  p->slots = {{0, -1}};
  p->code = {{ChainCode::tanh, {true, 0}, {}}};
  p->outputs = {0};
  p->shape = {64, 40};
  const detail::OpBox op = scan_engine::detail::elementwise_chain_op(std::move(p));
  Generator gen(2);
  Tape tape;
  const Var x = tape.variable(uniform({64, 40}, -1, 1, gen, f64));
  const std::uint64_t before = chain::compiled_runs();
  const Var y = scan_engine::detail::record_program_op(tape, op, {x});
  tape.backward(sum(y));
  EXPECT_EQ(chain::compiled_runs(), before);
  const std::vector<double> xs = testing::values(x), dx = testing::values(x.grad());
  for (std::size_t i = 0; i < xs.size(); ++i) EXPECT_NEAR(dx[i], 1 - std::tanh(xs[i]) * std::tanh(xs[i]), 1e-15);
}

}  // namespace
}  // namespace recur
