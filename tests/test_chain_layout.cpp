// A chain keeps the layouts of the input shapes it ran on (ChainProgram::layouts,
// ops/scan/elementwise_chain_layout_detail.hpp), and its backward's passes for the inputs that
// wanted gradients (ChainProgram::passes): a loop's steps call it with the same. Called
// with others it must work out theirs: one program run on other shapes, or with other inputs
// wanting gradients, gives each time the bits a program of its own gives, and what the ops
// give one by one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/step_program_detail.hpp>

#include "values.hpp"

namespace recur {
namespace {

using scan_engine::detail::ChainCode;
using scan_engine::detail::ChainOperand;
using scan_engine::detail::ChainProgram;

// y = tanh(x[:, :3] * x[:, 3:] + c) over [4, 3], its two gates read in place as columns of
// x: x of shape [4, 6] gives each row its own, x of shape [1, 6] one row for every row (its
// gradient sums the rows). The same program for both.
detail::OpBox gates_of_one_input() {
  auto p = std::make_shared<ChainProgram>();
  p->slots = {{0, 0}, {0, 3}, {1, -1}};
  p->code = {{ChainCode::mul, {true, 0}, {true, 1}}, {ChainCode::add, {false, 0}, {true, 2}},
             {ChainCode::tanh, {false, 1}, {}}};
  p->outputs = {2};
  p->shape = {4, 3};
  return scan_engine::detail::elementwise_chain_op(std::move(p));
}

struct Result {
  Tensor y, dx, dc;
};

// The chain `op` (or the ops one by one, without it) on x of shape x_shape and c of c_shape,
// with the gradient of sum(y * w); c a constant (no gradient) unless `c_wants_gradient`.
Result run(const detail::OpBox* op, const Shape& x_shape, bool c_wants_gradient = true, const Shape& c_shape = {4, 3}) {
  Generator gen(11);
  const Tensor x_value = uniform(x_shape, -1, 1, gen, DType::float64);
  const Tensor c_value = uniform(c_shape, -1, 1, gen, DType::float64);
  const Tensor w_value = uniform({4, 3}, -1, 1, gen, DType::float64);
  Tape tape;
  const Var x = tape.variable(x_value), c = c_wants_gradient ? tape.variable(c_value) : tape.constant(c_value);
  const Var y = op ? scan_engine::detail::record_program_op(tape, *op, {x, c})
                   : tanh(slice(x, 1, 0, 3) * slice(x, 1, 3, 6) + c);
  tape.backward(sum(y * tape.constant(w_value)));
  return {y.value(), x.grad(), c_wants_gradient ? c.grad() : Tensor()};
}

double relative_error(const Tensor& got, const Tensor& want) {
  const std::vector<double> g = testing::values(got), w = testing::values(want);
  double err = 0, scale = 0;
  for (std::size_t i = 0; i < g.size(); ++i) {
    err = std::max(err, std::abs(g[i] - w[i]));
    scale = std::max(scale, std::abs(w[i]));
  }
  return err / std::max(scale, 1e-300);
}

// The shared program's run (`got`) against a program of its own and the ops one by one: the
// same bits as the first; against the ops, the values to the bit (tanh takes the same
// kernel) and the gradients within 1e-15 (a row read by every row, a broadcast input, sums
// their gradients in another order). c's gradient where c wanted one.
void expect_as_its_own(const Result& got, const Result& fresh, const Result& ops, const std::string& what) {
  EXPECT_TRUE(testing::same_bytes(got.y, fresh.y)) << what;
  EXPECT_TRUE(testing::same_bytes(got.dx, fresh.dx)) << what;
  EXPECT_TRUE(testing::same_bytes(got.y, ops.y)) << what;
  EXPECT_LE(relative_error(got.dx, ops.dx), 1e-15) << what;
  ASSERT_EQ(got.dc.defined(), ops.dc.defined()) << what;
  if (!got.dc.defined()) return;
  EXPECT_TRUE(testing::same_bytes(got.dc, fresh.dc)) << what;
  EXPECT_LE(relative_error(got.dc, ops.dc), 1e-15) << what;
}

TEST(ChainLayout, OneProgramOnOtherShapesGivesWhatAProgramOfTheirOwnGives) {
  const detail::OpBox shared = gates_of_one_input();
  for (const Shape& x_shape : {Shape{4, 6}, Shape{1, 6}, Shape{4, 6}, Shape{1, 6}}) {
    const detail::OpBox own = gates_of_one_input();
    const Result got = run(&shared, x_shape);
    ASSERT_EQ(got.dx.shape(), x_shape);
    expect_as_its_own(got, run(&own, x_shape), run(nullptr, x_shape), "x of shape " + to_string(x_shape));
  }
}

TEST(ChainLayout, OneProgramForInputsThatWantGradientsOrNotGivesWhatAProgramOfItsOwnGives) {
  const detail::OpBox shared = gates_of_one_input();
  for (const bool c_wants : {false, true, false, true}) {
    const detail::OpBox own = gates_of_one_input();
    expect_as_its_own(run(&shared, {4, 6}, c_wants), run(&own, {4, 6}, c_wants), run(nullptr, {4, 6}, c_wants),
                      c_wants ? "c a variable" : "c a constant");
  }
}

// c whole ([4, 3]: the one slot writes its gradient) or broadcast ([3]: its gradient sums the
// rows, and the slot reads the sum's gradient where it is instead of a copy): other passes for
// the same inputs wanting gradients. Broadcast first: the whole one's passes, kept and used
// for [3], would happen to give its gradient; [3]'s used for [4, 3] leave c's unwritten.
// (Checked: keyed without how each input's gradient is written, this fails.)
TEST(ChainLayout, OneProgramOnAWholeAndABroadcastInputGivesWhatAProgramOfItsOwnGives) {
  const detail::OpBox shared = gates_of_one_input();
  for (const Shape& c_shape : {Shape{3}, Shape{4, 3}, Shape{3}, Shape{4, 3}}) {
    const detail::OpBox own = gates_of_one_input();
    const Result got = run(&shared, {4, 6}, true, c_shape);
    ASSERT_EQ(got.dc.shape(), c_shape);
    expect_as_its_own(got, run(&own, {4, 6}, true, c_shape), run(nullptr, {4, 6}, true, c_shape),
                      "c of shape " + to_string(c_shape));
  }
}

}  // namespace
}  // namespace recur
