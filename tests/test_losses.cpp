// Values of logsumexp, softmax, log_softmax and the losses against formulas evaluated here
// with std::exp / std::log, their stability for logits far beyond exp's range, and their
// errors (type, message, and an unchanged tape).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;

constexpr DType f64 = DType::float64;
constexpr double inf = std::numeric_limits<double>::infinity();

Tensor labels(std::vector<std::int64_t> values, const Shape& shape) { return from_vector(values, shape); }

// -log(softmax(row)[label]) straight from the definition (for moderate logits).
double ce_reference(const std::vector<double>& row, std::int64_t label) {
  double s = 0;
  for (double v : row) s += std::exp(v);
  return std::log(s) - row[label];
}

// -t log(sigmoid(x)) - (1 - t) log(1 - sigmoid(x)) from the definition.
double bce_reference(double x, double t) {
  const double p = 1 / (1 + std::exp(-x));
  return -t * std::log(p) - (1 - t) * std::log(1 - p);
}

// ---- logsumexp ----------------------------------------------------------------------

TEST(LogSumExp, HugeLogitsDoNotOverflow) {
  EXPECT_DOUBLE_EQ(logsumexp(tensor({1000, 1000}, f64)).item(), 1000 + std::log(2.0));
  EXPECT_DOUBLE_EQ(logsumexp(tensor({-1000, -1000}, f64)).item(), -1000 + std::log(2.0));
  EXPECT_NEAR(logsumexp(tensor({1000, 1000})).item(), 1000 + std::log(2.0), 1e-3);  // float32
  EXPECT_DOUBLE_EQ(logsumexp(tensor({1e300, 0}, f64)).item(), 1e300);
}

TEST(LogSumExp, AxesAndKeepdims) {
  const Tensor x = tensor({{1, 2, 3}, {4, 5, 6}}, f64);
  const Tensor rows = logsumexp(x, {1});
  ASSERT_EQ(rows.shape(), Shape({2}));
  EXPECT_NEAR(rows.at({0}), std::log(std::exp(1.0) + std::exp(2.0) + std::exp(3.0)), 1e-12);
  EXPECT_NEAR(rows.at({1}), std::log(std::exp(4.0) + std::exp(5.0) + std::exp(6.0)), 1e-12);
  const Tensor cols = logsumexp(x, {0}, true);
  ASSERT_EQ(cols.shape(), Shape({1, 3}));
  EXPECT_NEAR(cols.at({0, 2}), std::log(std::exp(3.0) + std::exp(6.0)), 1e-12);
  const Tensor all = logsumexp(x);
  ASSERT_EQ(all.shape(), Shape({}));
  double s = 0;
  for (int v = 1; v <= 6; ++v) s += std::exp(v);
  EXPECT_NEAR(all.item(), std::log(s), 1e-12);
  EXPECT_EQ(logsumexp(x, {0, 1}, true).shape(), Shape({1, 1}));
}

TEST(LogSumExp, InfiniteLanes) {
  const Tensor r = logsumexp(tensor({{-inf, -inf}, {inf, 0}, {-inf, 2}}, f64), {1});
  EXPECT_EQ(r.at({0}), -inf);
  EXPECT_EQ(r.at({1}), inf);
  EXPECT_DOUBLE_EQ(r.at({2}), 2.0);
}

TEST(LogSumExp, BackwardIsSoftmax) {
  Tape tape;
  const Tensor v = tensor({{1000, 1001, 1002}}, f64);
  Var x = tape.variable(v);
  tape.backward(sum(logsumexp(x, {1})));
  // exp(x - lse) with lse rounded at ulp(1000) ~ 1e-13: exact up to that.
  EXPECT_LT(max_abs_diff(x.grad(), softmax(v)), 1e-12);
}

// ---- softmax, log_softmax -------------------------------------------------------------

TEST(Softmax, RowsSumToOneAndMatchTheFormula) {
  const Tensor y = softmax(tensor({{1, 2, 3}, {1000, 1001, 1002}, {-1000, 0, 1000}}, f64));
  const double z = std::exp(1.0) + std::exp(2.0) + std::exp(3.0);
  for (std::int64_t k = 0; k < 3; ++k) {
    EXPECT_NEAR(y.at({0, k}), std::exp(k + 1.0) / z, 1e-15);
    EXPECT_NEAR(y.at({1, k}), std::exp(k + 1.0) / z, 1e-15);  // shift invariance, no overflow
  }
  EXPECT_EQ(y.at({2, 0}), 0.0);
  EXPECT_EQ(y.at({2, 1}), 0.0);  // exp(-1000) underflows: correct to double precision
  EXPECT_EQ(y.at({2, 2}), 1.0);
  const Tensor rows = sum(y, {1});
  for (std::int64_t r = 0; r < 3; ++r) EXPECT_NEAR(rows.at({r}), 1.0, 1e-15);
}

TEST(Softmax, AlongAnyAxis) {
  const Tensor x = reshape(arange(0.0, 24.0, 1.0, f64), {2, 3, 4}) * 0.37;
  for (std::int64_t axis : {0, 1, 2, -1}) {
    const Tensor totals = sum(softmax(x, axis), {axis});
    EXPECT_LT(max_abs_diff(totals, ones_like(totals)), 1e-14) << "axis " << axis;
  }
  // The middle axis against the formula at one element.
  const Tensor y = softmax(x, 1);
  double z = 0;
  for (std::int64_t k = 0; k < 3; ++k) z += std::exp(x.at({1, k, 2}));
  EXPECT_NEAR(y.at({1, 2, 2}), std::exp(x.at({1, 2, 2})) / z, 1e-15);
}

TEST(LogSoftmax, IsLogOfSoftmaxAndStaysFinite) {
  const Tensor x = tensor({{1, 2, 3}, {-2, 0.5, 0}}, f64);
  EXPECT_LT(max_abs_diff(log_softmax(x), log(softmax(x))), 1e-14);
  // log(softmax) would give log(0) = -inf here; log_softmax keeps the exact -1000.
  const Tensor big = log_softmax(tensor({1000, 0}, f64));
  EXPECT_DOUBLE_EQ(big.at({0}), 0.0);
  EXPECT_DOUBLE_EQ(big.at({1}), -1000.0);
  const Tensor big32 = log_softmax(tensor({0, 100}));
  EXPECT_EQ(big32.dtype(), DType::float32);
  EXPECT_NEAR(big32.at({0}), -100.0, 1e-4);
  EXPECT_NEAR(big32.at({1}), 0.0, 1e-6);
}

// ---- cross_entropy ------------------------------------------------------------------

TEST(CrossEntropy, MatchesTheFormula) {
  const Tensor logits = tensor({{1, 2, 3}, {1, -1, 0.5}, {0, 0, 0}}, f64);
  const Tensor y = labels({2, 0, 1}, {3});
  const std::vector<double> expected{ce_reference({1, 2, 3}, 2), ce_reference({1, -1, 0.5}, 0),
                                     ce_reference({0, 0, 0}, 1)};
  const Tensor per = cross_entropy(logits, y, Reduction::none);
  ASSERT_EQ(per.shape(), Shape({3}));
  for (std::int64_t i = 0; i < 3; ++i) EXPECT_NEAR(per.at({i}), expected[i], 1e-14);
  const double total = expected[0] + expected[1] + expected[2];
  EXPECT_NEAR(cross_entropy(logits, y, Reduction::sum).item(), total, 1e-14);
  const Tensor m = cross_entropy(logits, y);
  EXPECT_EQ(m.shape(), Shape({}));
  EXPECT_NEAR(m.item(), total / 3, 1e-14);
  EXPECT_NEAR(cross_entropy(logits, y, Reduction::none).at({2}), std::log(3.0), 1e-15);
}

TEST(CrossEntropy, HugeLogitsStayFinite) {
  const Tensor per = cross_entropy(tensor({{1000, 0}, {0, 1000}, {-1000, 1000}}, f64), labels({1, 1, 0}, {3}),
                                   Reduction::none);
  EXPECT_DOUBLE_EQ(per.at({0}), 1000.0);
  EXPECT_DOUBLE_EQ(per.at({1}), 0.0);
  EXPECT_DOUBLE_EQ(per.at({2}), 2000.0);
  EXPECT_NEAR(cross_entropy(tensor({{1000, 0}}), labels({1}, {1})).item(), 1000.0, 1e-3);  // float32
}

TEST(CrossEntropy, ClassVectorAndSpatialLayouts) {
  // [C] logits with a 0-d label.
  const Tensor one = cross_entropy(tensor({0.5, -1, 2}, f64), labels({0}, {}), Reduction::none);
  EXPECT_EQ(one.shape(), Shape({}));
  EXPECT_NEAR(one.item(), ce_reference({0.5, -1, 2}, 0), 1e-14);
  // [N, C, d] logits with [N, d] labels: classes on axis 1.
  const Tensor x = reshape(arange(0.0, 12.0, 1.0, f64), {2, 3, 2}) * 0.3 - 1.0;
  const Tensor y = labels({2, 0, 1, 2}, {2, 2});
  const Tensor per = cross_entropy(x, y, Reduction::none);
  ASSERT_EQ(per.shape(), Shape({2, 2}));
  double total = 0;
  for (std::int64_t n = 0; n < 2; ++n)
    for (std::int64_t i = 0; i < 2; ++i) {
      std::vector<double> row;
      for (std::int64_t c = 0; c < 3; ++c) row.push_back(x.at({n, c, i}));
      const double want = ce_reference(row, y.at<std::int64_t>({n, i}));
      EXPECT_NEAR(per.at({n, i}), want, 1e-14) << n << "," << i;
      total += want;
    }
  EXPECT_NEAR(cross_entropy(x, y).item(), total / 4, 1e-14);
}

TEST(CrossEntropy, GradientIsSoftmaxMinusOneHotOverN) {
  const Tensor v = tensor({{1, 2, 3}, {1, -1, 0.5}}, f64);
  Tape tape;
  Var x = tape.variable(v);
  tape.backward(cross_entropy(x, labels({2, 0}, {2})));
  const Tensor onehot = tensor({{0, 0, 1}, {1, 0, 0}}, f64);
  EXPECT_LT(max_abs_diff(x.grad(), (softmax(v) - onehot) / 2.0), 1e-15);
}

// ---- mse, binary_cross_entropy_with_logits ------------------------------------------

TEST(Mse, Values) {
  const Tensor p = tensor({{1, 2}, {3, 4}}, f64), t = tensor({{0, 2}, {5, 1}}, f64);
  EXPECT_DOUBLE_EQ(mse(p, t).item(), (1.0 + 0 + 4 + 9) / 4);
  EXPECT_DOUBLE_EQ(mse(p, t, Reduction::sum).item(), 14.0);
  const Tensor none = mse(p, t, Reduction::none);
  EXPECT_TRUE(allclose(none, tensor({{1, 0}, {4, 9}}, f64)));
  const Tensor empty = zeros({0, 3}, f64);
  EXPECT_TRUE(std::isnan(mse(empty, empty).item()));  // the mean of nothing, as in PyTorch
  EXPECT_EQ(mse(empty, empty, Reduction::sum).item(), 0.0);
}

// A reduced mse sums in partial sums (ops/loss.cpp): every length from 0 to 40 (the tail
// after the last full group of eight in every position) and a long float32 tensor, against
// a sum in long double, element by element; an infinity or a NaN anywhere still shows.
TEST(Mse, ReducedSumsOfEveryLengthMatchASumInLongDouble) {
  Generator gen(7);
  auto reference = [](const Tensor& p, const Tensor& t) {
    long double total = 0;
    for (std::int64_t i = 0; i < p.numel(); ++i) {
      const long double d = static_cast<long double>(p.data<float>()[i]) - static_cast<long double>(t.data<float>()[i]);
      total += d * d;
    }
    return static_cast<double>(total);
  };
  for (std::int64_t n : {0, 1, 7, 8, 9, 15, 16, 17, 23, 31, 33, 40, 1000003}) {
    const Tensor p = normal({n}, 0.0, 1.0, gen, DType::float32), t = normal({n}, 0.5, 2.0, gen, DType::float32);
    const double want = reference(p, t);
    const double got = mse(p, t, Reduction::sum).item();
    EXPECT_NEAR(got, want, 1e-6 * want) << "n " << n;  // float32 result: 2^-24 relative, with room
    if (n > 0) {
      const Tensor mean = mse(p.to(f64), t.to(f64));  // float64: the double sum itself, within its rounding
      EXPECT_NEAR(mean.item(), want / static_cast<double>(n), 1e-12 * want / static_cast<double>(n)) << "n " << n;
    }
  }
  for (const double bad : {std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()}) {
    std::vector<double> v(21, 1.0);
    v[13] = bad;
    const double got = mse(from_vector(v, {21}), zeros({21}, f64)).item();
    if (std::isnan(bad)) {
      EXPECT_TRUE(std::isnan(got));
    } else {
      EXPECT_EQ(got, bad);
    }
  }
}

TEST(BceWithLogits, MatchesTheFormulaAndHugeLogits) {
  const std::vector<double> xs{-2, 0.5, 3}, ts{0, 1, 0.25};
  const Tensor per = binary_cross_entropy_with_logits(from_vector(xs, {3}), from_vector(ts, {3}), Reduction::none);
  double total = 0;
  for (std::int64_t i = 0; i < 3; ++i) {
    EXPECT_NEAR(per.at({i}), bce_reference(xs[i], ts[i]), 1e-14);
    total += bce_reference(xs[i], ts[i]);
  }
  EXPECT_NEAR(binary_cross_entropy_with_logits(from_vector(xs, {3}), from_vector(ts, {3})).item(), total / 3, 1e-14);
  // exp(800) overflows double: the naive formula would give inf or NaN.
  const Tensor big = binary_cross_entropy_with_logits(tensor({100, -100, 800, -800}, f64),
                                                      tensor({0, 1, 1, 0}, f64), Reduction::none);
  EXPECT_DOUBLE_EQ(big.at({0}), 100.0);
  EXPECT_DOUBLE_EQ(big.at({1}), 100.0);
  EXPECT_DOUBLE_EQ(big.at({2}), 0.0);
  EXPECT_DOUBLE_EQ(big.at({3}), 0.0);
  EXPECT_DOUBLE_EQ(binary_cross_entropy_with_logits(tensor({800, -800}, f64), tensor({0, 1}, f64),
                                                    Reduction::sum).item(), 1600.0);
}

// ---- errors -------------------------------------------------------------------------


TEST(LossErrors, CrossEntropyLabelDType) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}, f64));
  const Tensor float_labels = tensor({0, 1}, f64);
  Var float_labels_var = tape.constant(float_labels);
  const std::initializer_list<std::string> mentions{"recur::cross_entropy", "'labels'", "int64", "float64", "[2]",
                                                    "[2, 3]"};
  expect_clean_failure<DTypeError>(tape, [&] { cross_entropy(x, float_labels); }, mentions);
  expect_clean_failure<DTypeError>(tape, [&] { cross_entropy(x, float_labels_var); }, mentions);
  expect_clean_failure<DTypeError>(tape, [&] { cross_entropy(x.value(), float_labels); }, mentions);
  Var int_logits = tape.constant(arange(6));
  expect_clean_failure<DTypeError>(tape, [&] { cross_entropy(int_logits, labels({0}, {1})); },
                                   {"recur::cross_entropy", "'logits'", "int64"});
}

TEST(LossErrors, CrossEntropyLabelOutOfRange) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}, f64));
  expect_clean_failure<IndexError>(tape, [&] { cross_entropy(x, labels({0, 3}, {2})); },
                                   {"recur::cross_entropy", "label 3", "position 1", "3 classes", "[2, 3]"});
  expect_clean_failure<IndexError>(tape, [&] { cross_entropy(x, labels({-1, 0}, {2}), Reduction::none); },
                                   {"recur::cross_entropy", "label -1", "position 0", "[2, 3]"});
  Var y = tape.constant(labels({5, 0}, {2}));
  expect_clean_failure<IndexError>(tape, [&] { cross_entropy(x, y); }, {"recur::cross_entropy", "label 5"});
}

TEST(LossErrors, CrossEntropyShapes) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { cross_entropy(x, labels({0, 1, 2}, {3})); },
                                   {"recur::cross_entropy", "'labels'", "[3]", "'logits'", "[2, 3]", "[2]"});
  Var spatial = tape.variable(ones({2, 3, 4}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { cross_entropy(spatial, labels({0, 1}, {2})); },
                                   {"recur::cross_entropy", "[2]", "[2, 3, 4]", "[2, 4]"});
  Var s = tape.variable(scalar(1.0, f64));
  expect_clean_failure<ShapeError>(tape, [&] { cross_entropy(s, labels({0}, {})); },
                                   {"recur::cross_entropy", "'logits'", "[]"});
}

TEST(LossErrors, ElementwiseLossesNeedMatchingShapesAndDTypes) {
  Tape tape;
  Var a = tape.variable(ones({2, 3}, f64)), b = tape.variable(ones({3}, f64)), c = tape.variable(ones({2, 3}));
  expect_clean_failure<ShapeError>(tape, [&] { mse(a, b); },
                                   {"recur::mse", "'prediction'", "'target'", "[2, 3]", "[3]"});
  expect_clean_failure<DTypeError>(tape, [&] { mse(a, c, Reduction::none); },
                                   {"recur::mse", "float64", "float32", "[2, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { binary_cross_entropy_with_logits(a, b); },
                                   {"recur::binary_cross_entropy_with_logits", "'logits'", "'targets'", "[2, 3]", "[3]"});
  Var i = tape.constant(arange(3));
  expect_clean_failure<DTypeError>(tape, [&] { mse(i, i); },
                                   {"recur::mse", "int64", "[3]"});
}

TEST(LossErrors, SoftmaxFamilyAxesAndDTypes) {
  Tape tape;
  Var a = tape.variable(ones({2, 3}, f64));
  expect_clean_failure<AxisError>(tape, [&] { softmax(a, 2); }, {"recur::softmax", "2", "rank 2"});
  expect_clean_failure<AxisError>(tape, [&] { log_softmax(a, -3); }, {"recur::log_softmax", "-3"});
  expect_clean_failure<AxisError>(tape, [&] { logsumexp(a, {0, 2}); }, {"recur::logsumexp", "2"});
  Var s = tape.variable(scalar(1.0, f64)), i = tape.constant(arange(3));
  expect_clean_failure<AxisError>(tape, [&] { softmax(s); }, {"recur::softmax", "rank 0"});
  expect_clean_failure<DTypeError>(tape, [&] { log_softmax(i); },
                                   {"recur::log_softmax", "int64"});
}

}  // namespace
}  // namespace recur
