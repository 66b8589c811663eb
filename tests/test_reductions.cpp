// Values of the reductions (sum, prod, max, min) against numbers worked out by hand, their
// empty-input and NaN rules, and the gradients the table cannot reach: ties, NaN, and
// prod at inputs with zeros (first and second order).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
constexpr DType f64 = DType::float64;
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

using testing::values;

// [[1, -2, 3], [4, 0, -6]]
Tensor example() { return tensor({{1.0, -2.0, 3.0}, {4.0, 0.0, -6.0}}, f64); }

TEST(Reductions, ValuesAlongAxes) {
  const Tensor x = example();
  EXPECT_EQ(values(sum(x, {0})), (std::vector<double>{5, -2, -3}));
  EXPECT_EQ(values(sum(x, {1})), (std::vector<double>{2, -2}));
  EXPECT_EQ(values(max(x, {1})), (std::vector<double>{3, 4}));
  EXPECT_EQ(values(min(x, {1})), (std::vector<double>{-2, -6}));
  EXPECT_EQ(values(min(x, {0})), (std::vector<double>{1, -2, -6}));
  EXPECT_EQ(values(prod(x, {1})), (std::vector<double>{-6, 0}));
  EXPECT_EQ(values(prod(x, {0})), (std::vector<double>{4, 0, -18}));
  EXPECT_EQ(max(x).item(), 4.0);
  EXPECT_EQ(min(x).item(), -6.0);
  EXPECT_EQ(prod(x).item(), 0.0);
  EXPECT_EQ(prod(tensor({{1.5, -2.0}, {3.0, 0.5}}, f64)).item(), -4.5);
  EXPECT_EQ(prod(x, {0}, true).shape(), (Shape{1, 3}));
  EXPECT_EQ(min(x, {-1}, true).shape(), (Shape{2, 1}));
}

TEST(Reductions, Float32ProductsAccumulateInDouble) {
  // 1.1f^200 multiplied in float32 steps is off by 2.7e-7 relative (189906048); in double
  // it is the exact value rounded once to float32 (189906096).
  const Tensor x = full({200}, 1.1, DType::float32);
  const double exact = std::pow(static_cast<double>(1.1f), 200);
  EXPECT_NEAR(prod(x).item(), exact, exact * 1e-7);
}

TEST(Reductions, EmptyInputs) {
  EXPECT_EQ(sum(zeros({0}, f64)).item(), 0.0);
  EXPECT_EQ(prod(zeros({0}, f64)).item(), 1.0);
  EXPECT_EQ(values(prod(zeros({2, 0}, f64), {1})), (std::vector<double>{1, 1}));
  Tape tape;
  Var e = tape.variable(zeros({2, 0}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { max(e); }, {"recur::max", "[2, 0]", "is empty"});
  expect_clean_failure<ShapeError>(tape, [&] { min(e, {0}); }, {"recur::min", "[2, 0]", "is empty"});
  // prod of an empty input is 1 and its gradient an empty tensor.
  Var p = prod(e);
  EXPECT_EQ(p.value().item(), 1.0);
  EXPECT_EQ(grad(p, e).shape(), (Shape{2, 0}));
}

TEST(Reductions, MaxAndMinPropagateNaN) {
  for (DType dt : {f64, DType::float32}) {
    EXPECT_TRUE(std::isnan(max(tensor({1.0, nan}, dt)).item()));
    EXPECT_TRUE(std::isnan(max(tensor({nan, 1.0}, dt)).item()));
    EXPECT_TRUE(std::isnan(min(tensor({1.0, nan, -3.0}, dt)).item()));
    const std::vector<double> rows = values(max(tensor({{1.0, nan, 0.0}, {4.0, 2.0, 3.0}}, dt), {1}));
    EXPECT_TRUE(std::isnan(rows[0]));
    EXPECT_EQ(rows[1], 4.0);
  }
}

TEST(Reductions, TiesAndNaNShareTheGradient) {
  Tape tape;
  Var x = tape.variable(tensor({2.0, 1.0, 1.0, 3.0}, f64));
  EXPECT_EQ(values(grad(min(x), x).value()), (std::vector<double>{0, 0.5, 0.5, 0}));
  Var y = tape.variable(tensor({3.0, 1.0, 3.0, 3.0}, f64));
  EXPECT_EQ(values(grad(max(y), y).value()), (std::vector<double>{1.0 / 3, 0, 1.0 / 3, 1.0 / 3}));
  // A NaN result's gradient goes to the NaN elements (as in PyTorch).
  Var z = tape.variable(tensor({1.0, nan, 3.0, nan}, f64));
  EXPECT_EQ(values(grad(max(z), z).value()), (std::vector<double>{0, 0.5, 0, 0.5}));
  EXPECT_EQ(values(grad(min(z), z).value()), (std::vector<double>{0, 0.5, 0, 0.5}));
}

TEST(Reductions, ProdGradientIsExactAtZeros) {
  Tape tape;
  // d prod / dx_i is the product of the others: [0*3, 2*3, 2*0].
  Var one_zero = tape.variable(tensor({2.0, 0.0, 3.0}, f64));
  EXPECT_EQ(values(grad(prod(one_zero), one_zero).value()), (std::vector<double>{0, 6, 0}));
  Var two_zeros = tape.variable(tensor({0.0, 5.0, 0.0}, f64));
  EXPECT_EQ(values(grad(prod(two_zeros), two_zeros).value()), (std::vector<double>{0, 0, 0}));
  // Along axis 0 of [[0, 2], [3, 0]]: each element's gradient is the other one in its column.
  Var m = tape.variable(tensor({{0.0, 2.0}, {3.0, 0.0}}, f64));
  EXPECT_EQ(values(grad(sum(prod(m, {0})), m).value()), (std::vector<double>{3, 0, 0, 2}));
}

TEST(Reductions, ProdSecondOrderIsExactAtZeros) {
  // f(a, b, c) = abc at (0, 5, 0): grad = [bc, ac, ab] = [0, 0, 0];
  // d(bc)/dx = [0, c, b] = [0, 0, 5], d(ab)/dx = [b, a, 0] = [5, 0, 0].
  Tape tape;
  Var x = tape.variable(tensor({0.0, 5.0, 0.0}, f64));
  Var g = grad(prod(x), x, {.create_graph = true});
  EXPECT_EQ(values(g.value()), (std::vector<double>{0, 0, 0}));
  EXPECT_EQ(values(grad(index(g, 0, 0), x).value()), (std::vector<double>{0, 0, 5}));
  EXPECT_EQ(values(grad(index(g, 0, 2), x).value()), (std::vector<double>{5, 0, 0}));
  // Seven elements (three doubling steps), two of them zero: d2 f / dx0 dx3 = product of the rest.
  Var y = tape.variable(tensor({0.0, 2.0, 3.0, 0.0, 0.5, -1.0, 4.0}, f64));
  Var gy = grad(prod(y), y, {.create_graph = true});
  EXPECT_EQ(values(grad(index(gy, 0, 0), y).value()), (std::vector<double>{0, 0, 0, -12, 0, 0, 0}));
}

}  // namespace
}  // namespace recur
