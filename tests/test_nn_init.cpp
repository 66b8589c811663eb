// Initializers (ops/nn/init.hpp): PyTorch's fans and gains, the bounds and moments of each
// distribution on large draws, orthogonality and the sign convention of orthogonal, and
// reproducibility from a seed.
#include <gtest/gtest.h>

#include <cmath>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn::init {
namespace {

using recur::testing::expect_error;

struct Moments {
  double mean = 0, std = 0, max_abs = 0;
};

Moments moments(const Tensor& t) {
  const auto v = to_vector<double>(t);
  Moments m;
  for (double x : v) m.mean += x / static_cast<double>(v.size());
  for (double x : v) {
    m.std += (x - m.mean) * (x - m.mean) / static_cast<double>(v.size());
    m.max_abs = std::max(m.max_abs, std::abs(x));
  }
  m.std = std::sqrt(m.std);
  return m;
}

// A sample of n draws: its mean is within 5 standard errors of the true mean, its standard
// deviation within 3% of the true one.
void expect_moments(const Tensor& t, double mean, double std) {
  const Moments m = moments(t);
  EXPECT_NEAR(m.mean, mean, 5 * std / std::sqrt(static_cast<double>(t.numel())));
  EXPECT_NEAR(m.std, std, 0.03 * std);
}

TEST(NnInit, FansFollowPyTorch) {
  EXPECT_EQ(fans({5, 3}).fan_in, 3);
  EXPECT_EQ(fans({5, 3}).fan_out, 5);
  EXPECT_EQ(fans({4, 2, 3, 3}).fan_in, 18);   // in * receptive field
  EXPECT_EQ(fans({4, 2, 3, 3}).fan_out, 36);  // out * receptive field
  expect_error<ValueError>([] { fans({7}); }, {"fans", "rank >= 2", "[7]"});
}

TEST(NnInit, GainsFollowPyTorch) {
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::linear), 1.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::sigmoid), 1.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::tanh), 5.0 / 3.0);
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::relu), std::sqrt(2.0));
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::leaky_relu, 0.2), std::sqrt(2.0 / 1.04));
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::leaky_relu), std::sqrt(2.0 / (1.0 + 1e-4)));
  EXPECT_DOUBLE_EQ(calculate_gain(Gain::selu), 0.75);
}

TEST(NnInit, UniformAndNormalMoments) {
  Generator gen(1);
  const Tensor u = uniform({200, 100}, gen, -0.5, 1.5, DType::float64);
  EXPECT_LT(moments(u).max_abs, 1.5);
  EXPECT_GE(to_vector<double>(u)[0], -0.5);
  expect_moments(u, 0.5, 2.0 / std::sqrt(12.0));
  expect_moments(normal({200, 100}, gen, 1.0, 2.0), 1.0, 2.0);
  EXPECT_EQ(normal({3}, gen).dtype(), DType::float32);
  EXPECT_EQ(max_abs_diff(init::zeros({2, 3}, DType::float64), recur::zeros({2, 3}, DType::float64)), 0.0);
}

TEST(NnInit, XavierBoundsAndSpread) {
  Generator gen(2);
  const double bound = 2.0 * std::sqrt(6.0 / (300 + 200));
  const Tensor u = xavier_uniform({300, 200}, gen, 2.0);
  EXPECT_LE(moments(u).max_abs, bound);
  expect_moments(u, 0.0, bound / std::sqrt(3.0));
  expect_moments(xavier_normal({300, 200}, gen, 0.5), 0.0, 0.5 * std::sqrt(2.0 / 500));
}

TEST(NnInit, KaimingUsesTheChosenFanAndGain) {
  Generator gen(3);
  // Defaults: a = 0, fan_in, leaky_relu -> gain sqrt(2), std sqrt(2 / fan_in).
  const Tensor u = kaiming_uniform({256, 128}, gen);
  EXPECT_LE(moments(u).max_abs, std::sqrt(3.0) * std::sqrt(2.0 / 128));
  expect_moments(u, 0.0, std::sqrt(2.0 / 128));
  expect_moments(kaiming_uniform({256, 128}, gen, 0.0, FanMode::fan_out), 0.0, std::sqrt(2.0 / 256));
  // torch.nn.Linear's weight: a = sqrt(5) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  const Tensor linear = kaiming_uniform({256, 100}, gen, std::sqrt(5.0));
  EXPECT_LE(moments(linear).max_abs, 0.1);
  expect_moments(linear, 0.0, 0.1 / std::sqrt(3.0));
  expect_moments(kaiming_normal({256, 128}, gen, 0.0, FanMode::fan_in, Gain::relu), 0.0, std::sqrt(2.0 / 128));
  expect_moments(kaiming_normal({64, 32, 3}, gen, 0.0, FanMode::fan_out, Gain::tanh), 0.0, 5.0 / 3.0 / std::sqrt(192.0));
}

// W as a [rows, cols] float64 matrix, and the normal draws orthogonal() factored.
struct Drawn {
  Tensor w, a;
};
Drawn draw_orthogonal(const Shape& shape, double gain, DType dtype) {
  Generator gen(7), twin(7);
  Drawn d;
  d.w = orthogonal(shape, gen, gain, dtype);
  EXPECT_EQ(d.w.shape(), shape);
  const std::int64_t rows = shape[0], cols = numel(shape) / rows;
  d.a = recur::normal({rows, cols}, 0.0, 1.0, twin, DType::float64);
  d.w = d.w.to(DType::float64).view({rows, cols});
  return d;
}

void expect_identity(const Tensor& m, double scale, double tol) {
  for (std::int64_t i = 0; i < m.size(0); ++i)
    for (std::int64_t j = 0; j < m.size(1); ++j) EXPECT_NEAR(m.at({i, j}), i == j ? scale : 0.0, tol) << i << "," << j;
}

// Upper triangular with a positive diagonal: the R of the QR with diag(R) > 0.
void expect_positive_upper(const Tensor& r) {
  for (std::int64_t i = 0; i < r.size(0); ++i) {
    EXPECT_GT(r.at({i, i}), 0.0) << i;
    for (std::int64_t j = 0; j < i && j < r.size(1); ++j) EXPECT_NEAR(r.at({i, j}), 0.0, 1e-12) << i << "," << j;
  }
}

TEST(NnInit, OrthogonalTall) {
  const Drawn d = draw_orthogonal({7, 4}, 2.0, DType::float64);
  expect_identity(matmul_t(d.w, d.w, true, false), 4.0, 1e-12);  // W^T W = gain^2 I
  expect_positive_upper(matmul_t(d.w, d.a, true, false));        // W^T A = gain R
}

TEST(NnInit, OrthogonalWideAndHigherRank) {
  for (const Shape& shape : {Shape{3, 8}, Shape{4, 2, 3}}) {
    const Drawn d = draw_orthogonal(shape, 1.0, DType::float64);
    expect_identity(matmul_t(d.w, d.w, false, true), 1.0, 1e-12);  // W W^T = I
    expect_positive_upper(matmul_t(d.w, d.a, false, true));         // W A^T = R (A^T = Q R)
  }
}

TEST(NnInit, OrthogonalSquareFloat32) {
  const Drawn d = draw_orthogonal({6, 6}, 1.0, DType::float32);
  expect_identity(matmul_t(d.w, d.w, true, false), 1.0, 1e-6);
  expect_identity(matmul_t(d.w, d.w, false, true), 1.0, 1e-6);
}

TEST(NnInit, OrthogonalErrors) {
  Generator gen(1);
  expect_error<ValueError>([&] { orthogonal({5}, gen); }, {"orthogonal", "rank >= 2", "[5]"});
  expect_error<DTypeError>([&] { orthogonal({2, 2}, gen, 1.0, DType::int64); }, {"orthogonal", "int64"});
  EXPECT_EQ(orthogonal({0, 3}, gen).numel(), 0);
}

TEST(NnInit, SeedsReproduce) {
  Generator a(42), b(42), c(43);
  const Tensor x = xavier_uniform({8, 5}, a), y = xavier_uniform({8, 5}, b), z = xavier_uniform({8, 5}, c);
  EXPECT_EQ(max_abs_diff(x, y), 0.0);
  EXPECT_GT(max_abs_diff(x, z), 0.0);
  EXPECT_EQ(max_abs_diff(orthogonal({4, 3}, a), orthogonal({4, 3}, b)), 0.0);
}

}  // namespace
}  // namespace recur::nn::init
