// Random tensors: the stream is fixed by the seed, survives a state save/restore (also
// through a .npy file), values derive from the raw engine bits as documented, the moments
// of 10^5 draws are right, and bad arguments throw without advancing the generator.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <random>
#include <unistd.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

// One tensor from each function and dtype, drawn in a fixed order.
std::vector<Tensor> draw_all(Generator& g) {
  std::vector<Tensor> out;
  for (DType d : {DType::float32, DType::float64}) {
    out.push_back(uniform({3, 5}, -1.0, 2.0, g, d));
    out.push_back(normal({7}, 0.5, 3.0, g, d));
    out.push_back(bernoulli({4, 1}, 0.3, g, d));
    out.push_back(bernoulli(full({2, 3}, 0.6, d), g));
  }
  out.push_back(bernoulli({5}, 0.5, g, DType::int64));
  return out;
}

void expect_same_stream(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(same_bytes(a[i], b[i])) << "tensor " << i;
}

struct Moments {
  double mean = 0, var = 0, skew = 0, kurt = 0, min = INFINITY, max = -INFINITY;
};
Moments moments(const Tensor& t) {
  const auto x = to_vector<double>(t);
  Moments m;
  for (double v : x) m.mean += v, m.min = std::min(m.min, v), m.max = std::max(m.max, v);
  m.mean /= static_cast<double>(x.size());
  double m3 = 0, m4 = 0;
  for (double v : x) {
    const double d = v - m.mean;
    m.var += d * d, m3 += d * d * d, m4 += d * d * d * d;
  }
  const auto n = static_cast<double>(x.size());
  m.var /= n;
  m.skew = m3 / n / std::pow(m.var, 1.5);
  m.kurt = m4 / n / (m.var * m.var);
  return m;
}


constexpr std::int64_t kDraws = 100000;

TEST(Random, EngineIsTheStandardMt19937_64) {
  // The C++ standard requires the 10000th output of a default-seeded mt19937_64 to be this.
  Generator g(5489);
  for (int i = 0; i < 9999; ++i) g.next_u64();
  EXPECT_EQ(g.next_u64(), 9981545732273789042ull);
}

TEST(Random, UniformsComeFromTheRawBits) {
  std::mt19937_64 engine(42);
  Generator g(42);
  const Tensor d = uniform({4}, 0.0, 1.0, g, DType::float64);
  const Tensor f = uniform({4}, -2.0, 6.0, g, DType::float32);
  for (std::int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(d.at<double>({i}), static_cast<double>(engine() >> 11) / 9007199254740992.0);  // 2^53
  for (std::int64_t i = 0; i < 4; ++i)
    EXPECT_EQ(f.at<float>({i}), static_cast<float>(-2.0 + 8.0 * static_cast<double>(engine() >> 40) / 16777216.0));
  Generator b(42);
  const Tensor bits = bernoulli({3}, 0.5, b, DType::int64);
  std::mt19937_64 e2(42);
  for (std::int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(bits.at<std::int64_t>({i}), static_cast<double>(e2() >> 11) / 9007199254740992.0 < 0.5 ? 1 : 0);
}

TEST(Random, SameSeedSameValuesOtherSeedOtherValues) {
  Generator a(7), b(7), c(8);
  const auto x = draw_all(a), y = draw_all(b), z = draw_all(c);
  expect_same_stream(x, y);
  EXPECT_FALSE(same_bytes(x[0], z[0]));
  EXPECT_FALSE(same_bytes(x[1], z[1]));
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
}

TEST(Random, CopiesContinueIndependently) {
  Generator a(3);
  uniform({10}, 0, 1, a);
  Generator b = a;
  expect_same_stream(draw_all(a), draw_all(b));
}

TEST(Random, StateRestoreContinuesTheSameStream) {
  Generator g(11);
  draw_all(g);
  normal({3}, 0, 1, g);  // an odd count, to stop mid-way through the engine's block
  const Tensor state = g.state();
  EXPECT_EQ(state.dtype(), DType::int64);
  EXPECT_EQ(state.rank(), 1);
  const auto expected = draw_all(g);

  Generator h(999);
  h.set_state(state);
  expect_same_stream(draw_all(h), expected);

  // The state is an ordinary tensor: it survives a checkpoint file bit for bit.
  const auto path = std::filesystem::temp_directory_path() / ("recur_rng_state_" + std::to_string(::getpid()) + ".npy");
  save_npy(path, state);
  Generator k(1);
  k.set_state(load_npy(path, DType::int64));
  std::filesystem::remove(path);
  expect_same_stream(draw_all(k), expected);
}

TEST(Random, BadStatesAreRejectedAndLeaveTheGeneratorAlone) {
  Generator g(5);
  const Generator before = g;
  const Tensor state = g.state();
  expect_error<DTypeError>([&] { g.set_state(state.to(DType::float64)); }, {"Generator::set_state", "int64", "float64"});
  expect_error<ShapeError>([&] { g.set_state(state.view({1, state.numel()})); },
                           {"Generator::set_state", to_string(state.shape())});
  expect_error<ShapeError>([&] { g.set_state(arange(3)); }, {"Generator::set_state", "[3]"});
  expect_error<ValueError>([&] { g.set_state(Tensor()); }, {"Generator::set_state", "undefined"});
  EXPECT_TRUE(g == before);
}

TEST(Random, UniformMoments) {
  Generator g(2024);
  for (DType d : {DType::float32, DType::float64}) {
    const Moments m = moments(uniform({kDraws}, -2.0, 3.0, g, d));
    // mean 0.5, variance 25/12; the standard error of the mean is 0.0046.
    EXPECT_NEAR(m.mean, 0.5, 0.025) << name_of(d);
    EXPECT_NEAR(m.var, 25.0 / 12, 0.03) << name_of(d);
    EXPECT_NEAR(m.skew, 0.0, 0.03) << name_of(d);
    EXPECT_GE(m.min, -2.0);
    EXPECT_LT(m.max, 3.0);
    EXPECT_LT(m.min, -1.99);
    EXPECT_GT(m.max, 2.99);
  }
}

TEST(Random, UniformNeverReturnsHi) {
  // Rounding lo + (hi - lo) * u to the dtype would give hi for about half of these.
  Generator g(1);
  const float f_hi = std::nextafter(1.0f, 2.0f);
  const Tensor f = uniform({1000}, 1.0, f_hi, g, DType::float32);
  for (float v : to_vector<float>(f)) ASSERT_EQ(v, 1.0f);
  const double d_hi = std::nextafter(1.0, 2.0);
  const Tensor d = uniform({1000}, 1.0, d_hi, g, DType::float64);
  for (double v : to_vector<double>(d)) ASSERT_EQ(v, 1.0);
  // lo == hi is allowed and gives lo.
  for (double v : to_vector<double>(uniform({5}, 4.0, 4.0, g, DType::float64))) EXPECT_EQ(v, 4.0);
}

TEST(Random, NormalMoments) {
  Generator g(99);
  for (DType d : {DType::float32, DType::float64}) {
    const Moments m = moments(normal({kDraws}, 1.0, 2.0, g, d));
    // Standard errors: mean 0.0063, std 0.0045, skewness 0.0077, kurtosis 0.0155.
    EXPECT_NEAR(m.mean, 1.0, 0.032) << name_of(d);
    EXPECT_NEAR(std::sqrt(m.var), 2.0, 0.025) << name_of(d);
    EXPECT_NEAR(m.skew, 0.0, 0.04) << name_of(d);
    EXPECT_NEAR(m.kurt, 3.0, 0.08) << name_of(d);
  }
  // Odd sizes and std 0.
  EXPECT_EQ(normal({5}, 0, 1, g).numel(), 5);
  for (double v : to_vector<double>(normal({3}, -1.5, 0.0, g, DType::float64))) EXPECT_EQ(v, -1.5);
}

TEST(Random, BernoulliMoments) {
  Generator g(5);
  for (DType d : {DType::float32, DType::float64, DType::int64}) {
    const Tensor b = bernoulli({kDraws}, 0.3, g, d);
    EXPECT_EQ(b.dtype(), d);
    const Moments m = moments(b);
    EXPECT_NEAR(m.mean, 0.3, 0.0075) << name_of(d);  // standard error 0.00145
    EXPECT_EQ(m.min, 0.0);
    EXPECT_EQ(m.max, 1.0);
  }
  EXPECT_EQ(moments(bernoulli({1000}, 0.0, g)).max, 0.0);
  EXPECT_EQ(moments(bernoulli({1000}, 1.0, g)).min, 1.0);
}

TEST(Random, BernoulliOfAProbabilityTensor) {
  Generator g(6);
  // Columns with p = 0, 0.25, 1, broadcast down 10^5 rows / 3.
  const std::int64_t rows = kDraws / 3;
  std::vector<double> p;
  for (std::int64_t r = 0; r < rows; ++r) p.insert(p.end(), {0.0, 0.25, 1.0});
  for (DType d : {DType::float32, DType::float64}) {
    const Tensor probs = from_vector(p, {rows, 3}).to(d);
    const Tensor b = bernoulli(probs, g);
    EXPECT_EQ(b.dtype(), d);
    EXPECT_EQ(b.shape(), probs.shape());
    double col[3] = {0, 0, 0};
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < 3; ++c) col[c] += b.at<double>({r, c});
    EXPECT_EQ(col[0], 0.0);
    EXPECT_NEAR(col[1] / static_cast<double>(rows), 0.25, 0.012);  // standard error 0.0024
    EXPECT_EQ(col[2], static_cast<double>(rows));
  }
}

TEST(Random, BadArgumentsThrowWithoutDrawing) {
  Generator g(8);
  const Generator before = g;
  expect_error<ValueError>([&] { uniform({2}, 1.0, 0.0, g); }, {"recur::uniform", "'hi'", "'lo'"});
  expect_error<ValueError>([&] { uniform({2}, 0.0, NAN, g); }, {"recur::uniform", "'hi'"});
  expect_error<ValueError>([&] { uniform({2}, -1e308, 1e308, g); }, {"recur::uniform", "overflows"});
  expect_error<DTypeError>([&] { uniform({2}, 0.0, 1.0, g, DType::int64); }, {"recur::uniform", "int64"});
  expect_error<ShapeError>([&] { uniform({2, -1}, 0.0, 1.0, g); }, {"recur::uniform", "'shape'", "[2, -1]"});
  expect_error<ValueError>([&] { normal({2}, 0.0, -1.0, g); }, {"recur::normal", "'std'", "-1"});
  expect_error<ValueError>([&] { normal({2}, INFINITY, 1.0, g); }, {"recur::normal", "'mean'"});
  expect_error<DTypeError>([&] { normal({2}, 0.0, 1.0, g, DType::int64); }, {"recur::normal", "int64"});
  expect_error<ValueError>([&] { bernoulli({2}, 1.5, g); }, {"recur::bernoulli", "'p'", "1.5"});
  expect_error<ValueError>([&] { bernoulli({2}, NAN, g); }, {"recur::bernoulli", "'p'"});
  expect_error<ValueError>([&] { bernoulli(tensor({0.5, -0.25, 0.1}), g); },
                           {"recur::bernoulli", "'p'", "[3]", "-0.25", "index 1"});
  expect_error<DTypeError>([&] { bernoulli(arange(3), g); }, {"recur::bernoulli", "int64"});
  expect_error<ValueError>([&] { bernoulli(Tensor(), g); }, {"recur::bernoulli", "undefined"});
  EXPECT_TRUE(g == before) << "a failed call advanced the generator";
}

TEST(Random, EmptyAndZeroDimensionalShapes) {
  Generator g(4);
  const Generator before = g;
  EXPECT_EQ(uniform({0, 3}, 0, 1, g).shape(), (Shape{0, 3}));
  EXPECT_EQ(normal({0}, 0, 1, g).numel(), 0);
  EXPECT_TRUE(g == before) << "empty tensors draw nothing";
  EXPECT_EQ(uniform({}, 0, 1, g).rank(), 0);
  EXPECT_EQ(normal({}, 0, 1, g).numel(), 1);
}

}  // namespace
}  // namespace recur
