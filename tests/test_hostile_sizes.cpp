// Sizes and values an attacker (or a corrupt file) can hand recur through the C++ API (issue
// 24): every product or sum of sizes is checked, every float-to-integer conversion is
// defined, and the tape is left as it was. Each of these was a wrapped number or undefined
// behaviour (UBSan) before.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include <recur/autodiff/revolve.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::testing {
namespace {

constexpr std::int64_t k62 = std::int64_t{1} << 62;

TEST(HostileSizes, ShapesWhoseSizesPassInt64AreRefusedEmptyOrNot) {
  // NumPy's rule: the sizes other than 0 must multiply within int64, or strides overflow.
  expect_error<ShapeError>([] { zeros({0, k62, k62}); }, {"recur::empty", "[0, 4611686018427387904, 4611686018427387904]"});
  expect_error<ShapeError>([] { (void)numel(Shape{k62, 4}); }, {"[4611686018427387904, 4]"});
  EXPECT_EQ(numel(Shape{k62, 0}), 0);
  EXPECT_EQ(zeros({k62, 0}).numel(), 0);
}

TEST(HostileSizes, ConcatAlongAnAxisWhoseSizesAddPastInt64) {
  Tape tape;
  const Var a = tape.constant(zeros({k62, 0})), b = tape.constant(zeros({k62, 0}));
  expect_clean_failure<ShapeError>(tape, [&] { concat({a, b}, 0); }, {"concat", "past int64"});
}

TEST(HostileSizes, FloatToIntegerConversionsOutOfRangeAreValueErrors) {
  const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
  for (const double v : {nan, inf, -inf, 0x1p63, -0x1p64}) {
    const Tensor x = full({1}, v, DType::float64);
    expect_error<ValueError>([&] { x.to(DType::int64); }, {"recur::to", "cannot be held in int64"});
    expect_error<ValueError>([&] { (void)x.item<std::int64_t>(); }, {"recur::item"});
    expect_error<ValueError>([&] { (void)x.at<std::int64_t>({0}); }, {"recur::at"});
    expect_error<ValueError>([&] { full({1}, v, DType::int64); }, {"recur::full"});
  }
  // In range, truncation toward zero, and -2^63 exactly.
  EXPECT_EQ(full({1}, -0x1p63, DType::float64).to(DType::int64).item<std::int64_t>(), std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(full({1}, 2.9, DType::float64).item<std::int64_t>(), 2);
  expect_error<ValueError>([] { arange(0x1p63 - 4096, 0x1p64, 0x1p62, DType::int64); }, {"recur::arange"});
}

TEST(HostileSizes, RevolveScheduleCountsThatPassInt64) {
  expect_error<ValueError>([] { revolve::minimal_advances(std::int64_t{1} << 40, 1); }, {"revolve", "int64"});
  EXPECT_EQ(revolve::minimal_advances(10, 1), 45);  // T(T-1)/2 from the start every time
}

TEST(HostileSizes, RecurrentSizesWhoseWeightsPassInt64) {
  Generator gen(1);
  expect_error<ValueError>([&] { nn::LSTM({.input_size = 4, .hidden_size = k62}, gen); }, {"hidden_size", "int64"});
}

TEST(HostileSizes, TapsBeyondTwoToThe62AreRefused) {
  Tape tape;
  const Var x = tape.constant(zeros({3}, DType::float64));
  const auto id = [](std::span<const Var> a) { return a[0]; };
  expect_clean_failure<ValueError>(tape, [&] { theano::map(id, {theano::Sequence(x, {std::numeric_limits<std::int64_t>::min()})}); },
                                   {"taps", "2^62"});
}

}  // namespace
}  // namespace recur::testing
