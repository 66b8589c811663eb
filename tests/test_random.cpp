// Random tensors: the stream is fixed by the seed, survives a state save/restore (also
// through a .npy file), values derive from the raw engine bits as documented, the moments
// of 10^5 draws are right, and bad arguments throw without advancing the generator.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <numbers>
#include <vector>
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

TEST(Random, PhiloxMatchesRandom123KnownAnswers) {
  using detail::philox4x32_10;
  using W = detail::PhiloxCounter;
  // Random123's kat_vectors for philox4x32 with 10 rounds: counter, key -> output.
  EXPECT_EQ(philox4x32_10({0, 0, 0, 0}, {0, 0}), (W{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}));
  EXPECT_EQ(philox4x32_10({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}),
            (W{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}));
  EXPECT_EQ(philox4x32_10({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}),
            (W{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}));
}

// A Generator at `position` (raw draws made) of the stream of `seed`, set through a state.
Generator at_position(std::uint64_t seed, std::uint64_t position_lo, std::uint64_t position_hi) {
  Tensor state = Generator(seed).state().clone();
  state.data<std::int64_t>()[2] = std::bit_cast<std::int64_t>(position_lo);
  state.data<std::int64_t>()[3] = std::bit_cast<std::int64_t>(position_hi);
  Generator g(0);
  g.set_state(state);
  return g;
}

std::uint64_t low_half(const detail::PhiloxCounter& w) { return w[0] | std::uint64_t{w[1]} << 32; }
std::uint64_t high_half(const detail::PhiloxCounter& w) { return w[2] | std::uint64_t{w[3]} << 32; }

TEST(Random, RawDrawsAreTheHalvesOfPhiloxBlocksInOrder) {
  // Seed 0 from its start: block 0 under key 0, the first known answer.
  Generator zero(0);
  EXPECT_EQ(zero.next_u64(), 0xe169c58d6627e8d5ull);
  EXPECT_EQ(zero.next_u64(), 0x9b00dbd8bc57ac4cull);
  // The third known answer: key = seed, block b = the counter, at position 2b.
  const std::uint64_t b_lo = 0x85a308d3243f6a88ull, b_hi = 0x0370734413198a2eull;
  Generator pi = at_position(0x299f31d0a4093822ull, b_lo << 1, b_hi << 1 | b_lo >> 63);
  EXPECT_EQ(pi.next_u64(), 0x94fdccebd16cfe09ull);
  EXPECT_EQ(pi.next_u64(), 0x24126ea15001e420ull);
  // Any seed: draws 2b and 2b + 1 from block b.
  Generator g(42);
  for (std::uint32_t b = 0; b < 5; ++b) {
    const auto w = detail::philox4x32_10({b, 0, 0, 0}, {42, 0});
    EXPECT_EQ(g.next_u64(), low_half(w)) << b;
    EXPECT_EQ(g.next_u64(), high_half(w)) << b;
  }
}

TEST(Random, DiscardIsDrawingWithoutTheDraws) {
  for (std::uint64_t start : {0, 1, 2, 3})
    for (std::uint64_t n : {0, 1, 2, 3, 5, 1000}) {
      Generator a(9), b(9);
      for (std::uint64_t i = 0; i < start; ++i) a.next_u64(), b.next_u64();
      a.discard(n);
      for (std::uint64_t i = 0; i < n; ++i) b.next_u64();
      EXPECT_TRUE(a == b) << start << " + " << n;
      EXPECT_EQ(a.next_u64(), b.next_u64()) << start << " + " << n;
      EXPECT_EQ(a.next_u64(), b.next_u64()) << start << " + " << n;
    }
  // The position is 128 bits: it carries into the high word, and so does the block number.
  Generator g = at_position(7, ~0ull, 0);
  EXPECT_EQ(g.next_u64(), high_half(detail::philox4x32_10({0xffffffff, 0x7fffffff, 0, 0}, {7, 0})));
  EXPECT_TRUE(g == at_position(7, 0, 1));
  EXPECT_EQ(g.next_u64(), low_half(detail::philox4x32_10({0, 0x80000000, 0, 0}, {7, 0})));
  Generator h = at_position(7, ~0ull - 2, 0);
  h.discard(5);
  EXPECT_TRUE(h == at_position(7, 2, 1));
  EXPECT_EQ(h.state().data<std::int64_t>()[3], 1);
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
  // The same shape without the tag: not a state.
  expect_error<ValueError>([&] { g.set_state(arange(4)); }, {"Generator::set_state", "not a Philox4x32-10"});
  // A state of the mt19937_64 Generator recur had before (312 words and an index).
  expect_error<ShapeError>([&] { g.set_state(zeros({313}, DType::int64)); },
                           {"Generator::set_state", "[313]", "mt19937_64", "seed"});
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
