// Linear and Embedding: values and gradients computed by hand, PyTorch's names, shapes and
// initialization ranges, and errors that record nothing.
#include <gtest/gtest.h>

#include <cmath>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;
using recur::testing::expect_error;

TEST(Linear, NamesShapesAndTorchInit) {
  Generator gen(1);
  const Linear lin(16, 5, gen);
  const auto& p = lin.named_parameters();
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].first, "weight");
  EXPECT_EQ(p[1].first, "bias");
  EXPECT_EQ(lin.weight().shape(), (Shape{5, 16}));
  EXPECT_EQ(lin.bias().shape(), (Shape{5}));
  for (const auto& [name, s] : p) {
    const auto v = to_vector<double>(s.value());
    for (double x : v) EXPECT_LE(std::abs(x), 0.25) << name;  // U(-1/sqrt(16), 1/sqrt(16))
  }
  EXPECT_EQ(Linear(3, 2, gen, false).named_parameters().size(), 1u);
  expect_error<ValueError>([&] { Linear(0, 2, gen); }, {"Linear", "in_features (0)"});
}

TEST(Linear, ValuesAndGradientsByHand) {
  Generator gen(2);
  const Linear lin(3, 2, gen, true, DType::float64);
  const auto w = to_vector<double>(lin.weight().value()), b = to_vector<double>(lin.bias().value());
  const Tensor xt = normal({2, 4, 3}, 0, 1, gen, DType::float64);
  const auto x = to_vector<double>(xt);
  Tape tape;
  const Var y = lin(Var(xt));
  ASSERT_EQ(y.shape(), (Shape{2, 4, 2}));
  const auto got = to_vector<double>(y.value());
  for (std::size_t r = 0; r < 8; ++r)
    for (std::size_t o = 0; o < 2; ++o) {
      double want = b[o];
      for (std::size_t k = 0; k < 3; ++k) want += x[r * 3 + k] * w[o * 3 + k];
      EXPECT_NEAR(got[r * 2 + o], want, 1e-14);
    }
  lin.zero_grad();
  tape.backward(sum(y));
  // d sum / d W[o, k] = sum over rows of x[., k]; d sum / d b[o] = number of rows.
  const auto gw = to_vector<double>(lin.weight().grad()), gb = to_vector<double>(lin.bias().grad());
  for (std::size_t o = 0; o < 2; ++o) {
    EXPECT_DOUBLE_EQ(gb[o], 8.0);
    for (std::size_t k = 0; k < 3; ++k) {
      double col = 0;
      for (std::size_t r = 0; r < 8; ++r) col += x[r * 3 + k];
      EXPECT_NEAR(gw[o * 3 + k], col, 1e-13);
    }
  }
  EXPECT_EQ(lin(Var(xt[0][1])).shape(), (Shape{2}));  // a single vector
}

TEST(Linear, ErrorsRecordNothing) {
  Generator gen(3);
  const Linear lin(3, 2, gen);
  Tape tape;
  const Var wide = tape.constant(zeros({4, 5})), f64 = tape.constant(zeros({4, 3}, DType::float64));
  expect_clean_failure<ShapeError>(tape, [&] { lin(wide); }, {"Linear", "'input'", "[4, 5]", "in_features = 3"});
  expect_clean_failure<DTypeError>(tape, [&] { lin(f64); }, {"Linear", "float64", "float32"});
}

TEST(Embedding, LooksUpRowsAndAddsRepeatedGradients) {
  Generator gen(4);
  const Embedding emb(5, 3, gen, DType::float64);
  ASSERT_EQ(emb.named_parameters().size(), 1u);
  EXPECT_EQ(emb.named_parameters()[0].first, "weight");
  const Tensor w = emb.weight().value();
  const Tensor ids = from_vector<std::int64_t>({0, 4, 4, 1}, {2, 2});
  Tape tape;
  const Var y = emb(ids);
  ASSERT_EQ(y.shape(), (Shape{2, 2, 3}));
  const std::int64_t want_rows[] = {0, 4, 4, 1};
  for (std::int64_t i = 0; i < 4; ++i)
    for (std::int64_t k = 0; k < 3; ++k) EXPECT_EQ(y.value().at({i / 2, i % 2, k}), w.at({want_rows[i], k}));
  emb.zero_grad();
  tape.backward(sum(y));
  const double counts[] = {1, 1, 0, 0, 2};
  for (std::int64_t r = 0; r < 5; ++r)
    for (std::int64_t k = 0; k < 3; ++k) EXPECT_EQ(emb.weight().grad().at({r, k}), counts[r]);
  EXPECT_EQ(max_abs_diff(emb(tape.constant(ids)).value(), y.value()), 0.0);  // indices as a Var
}

TEST(Embedding, InitIsStandardNormal) {
  Generator gen(5);
  const auto v = to_vector<double>(Embedding(1000, 20, gen).weight().value());
  double mean = 0, sq = 0;
  for (double x : v) mean += x / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean) / static_cast<double>(v.size());
  EXPECT_NEAR(mean, 0.0, 5.0 / std::sqrt(20000.0));
  EXPECT_NEAR(std::sqrt(sq), 1.0, 0.03);
}

TEST(Embedding, ErrorsRecordNothing) {
  Generator gen(6);
  const Embedding emb(5, 3, gen);
  Tape tape;
  expect_clean_failure<DTypeError>(tape, [&] { emb(zeros({2})); }, {"Embedding", "'indices'", "int64", "float32"});
  expect_clean_failure<IndexError>(tape, [&] { emb(from_vector<std::int64_t>({1, 5}, {2})); }, {"index 5"});
  expect_error<ValueError>([&] { Embedding(5, 0, gen); }, {"Embedding", "embedding_dim (0)"});
}

}  // namespace
}  // namespace recur::nn
