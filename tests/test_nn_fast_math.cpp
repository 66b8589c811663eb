// The vectorized activations of the fused recurrent ops (ops/kernels/fast_math_detail.hpp) against the
// C library's exp, tanh and 1 / (1 + exp(-x)) computed in long double: a few ulp over
// the whole range, exact limits, NaN propagated.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include <recur/ops/kernels/fast_math_detail.hpp>

namespace recur::detail {
namespace {

enum class Fn { exp, tanh, sigmoid };

template <class T>
std::vector<T> apply(Fn fn, std::vector<T> x) {
  std::vector<T> y(x.size());
  if (fn == Fn::tanh) tanh_row(x.data(), y.data(), static_cast<std::int64_t>(x.size()));
  if (fn == Fn::sigmoid) sigmoid_row<T>(x.data(), nullptr, y.data(), static_cast<std::int64_t>(x.size()));
  if (fn == Fn::exp) {
    y = x;
    for (std::size_t s = 0; s < y.size(); s += kChunk)
      exp_chunk(y.data() + s, std::min<std::int64_t>(kChunk, static_cast<std::int64_t>(y.size() - s)));
  }
  return y;
}

long double reference(Fn fn, long double x) {
  if (fn == Fn::exp) return std::exp(x);
  if (fn == Fn::tanh) return std::tanh(x);
  return 1.0L / (1.0L + std::exp(-x));
}

// Largest relative error over n points evenly spread on [lo, hi] (an odd count hits 0).
template <class T>
double worst_error(Fn fn, double lo, double hi, int n = 200001) {
  std::vector<T> x(n);
  for (int i = 0; i < n; ++i) x[i] = static_cast<T>(lo + (hi - lo) * i / (n - 1));
  const std::vector<T> y = apply(fn, x);
  double worst = 0;
  for (int i = 0; i < n; ++i) {
    const long double r = reference(fn, x[i]);
    if (r != 0) worst = std::max(worst, static_cast<double>(std::abs((y[i] - r) / r)));
  }
  return worst;
}

template <class T>
void expect_accurate() {
  const double ulp = std::numeric_limits<T>::epsilon();
  const double exp_hi = sizeof(T) == 4 ? 88.0 : 709.0, exp_lo = sizeof(T) == 4 ? -87.0 : -708.0;
  EXPECT_LT(worst_error<T>(Fn::exp, exp_lo, exp_hi), 3 * ulp);
  EXPECT_LT(worst_error<T>(Fn::exp, -1.0, 1.0), 3 * ulp);
  EXPECT_LT(worst_error<T>(Fn::tanh, -25.0, 25.0), 3 * ulp);
  EXPECT_LT(worst_error<T>(Fn::tanh, -1e-3, 1e-3), 3 * ulp);  // small arguments: no cancellation
  EXPECT_LT(worst_error<T>(Fn::tanh, -0.6, 0.6), 3 * ulp);    // across the series/exp switch
  EXPECT_LT(worst_error<T>(Fn::sigmoid, -40.0, 40.0), 3 * ulp);
}

TEST(FastMath, FloatWithinThreeUlp) { expect_accurate<float>(); }
TEST(FastMath, DoubleWithinThreeUlp) { expect_accurate<double>(); }

template <class T>
void expect_limits() {
  const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
  const std::vector<T> x = {inf, -inf, T(1e30), T(-1e30), T(0), nan};
  const std::vector<T> t = apply(Fn::tanh, x), s = apply(Fn::sigmoid, x), e = apply(Fn::exp, x);
  EXPECT_EQ(t[0], 1);
  EXPECT_EQ(t[1], -1);
  EXPECT_EQ(t[2], 1);
  EXPECT_EQ(t[3], -1);
  EXPECT_EQ(t[4], 0);
  EXPECT_EQ(s[0], 1);
  EXPECT_LT(s[1], std::numeric_limits<T>::min());  // 0 or a subnormal
  EXPECT_EQ(s[4], T(0.5));
  EXPECT_TRUE(std::isnan(t[5]));
  EXPECT_TRUE(std::isnan(s[5]));
  EXPECT_TRUE(std::isnan(e[5]));
  EXPECT_TRUE(std::isfinite(e[0]));  // clamped: the largest exp the kernel makes
}

TEST(FastMath, FloatLimitsAndNaN) { expect_limits<float>(); }
TEST(FastMath, DoubleLimitsAndNaN) { expect_limits<double>(); }

TEST(FastMath, RowsOfAnyLengthAndInPlace) {
  for (std::int64_t n : {1, 63, 64, 65, 200}) {
    std::vector<double> x(static_cast<std::size_t>(n)), a(x.size()), b(x.size());
    for (std::int64_t i = 0; i < n; ++i) x[i] = 0.05 * static_cast<double>(i) - 3.0;
    std::vector<double> y = x;
    tanh_row(y.data(), y.data(), n);  // in place, as the GRU op uses it
    sigmoid_row(x.data(), x.data(), a.data(), n);
    for (std::int64_t i = 0; i < n; ++i) {
      EXPECT_NEAR(y[i], std::tanh(x[i]), 1e-15) << n << " " << i;
      EXPECT_NEAR(a[i], 1.0 / (1.0 + std::exp(-2 * x[i])), 1e-15) << n << " " << i;
    }
  }
}

}  // namespace
}  // namespace recur::detail
