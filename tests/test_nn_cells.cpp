// RNN, LSTM and GRU cells against their equations written out in plain doubles; the fused
// ops on Tensors and Vars alike; the cell modules' names, initialization and zero state;
// argument errors that record nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

using recur::testing::expect_clean_failure;
using recur::testing::expect_error;
using Vec = std::vector<double>;

constexpr std::int64_t kB = 2, kI = 3, kH = 2;

double sig(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// x [B, I] W^T [I, G*H] + b, row by row.
Vec affine(const Vec& x, const Vec& w, const Vec& b, std::int64_t in, std::int64_t out) {
  Vec y(static_cast<std::size_t>(kB * out));
  for (std::int64_t r = 0; r < kB; ++r)
    for (std::int64_t o = 0; o < out; ++o) {
      double s = b[o];
      for (std::int64_t k = 0; k < in; ++k) s += x[r * in + k] * w[o * in + k];
      y[r * out + o] = s;
    }
  return y;
}

// Small fixed values: x, h, c and the four parameters of a cell with `gates` gates.
struct Values {
  Vec x, h, c, w_ih, w_hh, b_ih, b_hh;
  explicit Values(std::int64_t gates) {
    auto fill = [](std::int64_t n, double phase) {
      Vec v(static_cast<std::size_t>(n));
      for (std::int64_t i = 0; i < n; ++i) v[i] = 0.7 * std::sin(1.3 * static_cast<double>(i) + phase);
      return v;
    };
    x = fill(kB * kI, 0.1);
    h = fill(kB * kH, 0.2);
    c = fill(kB * kH, 0.3);
    w_ih = fill(gates * kH * kI, 0.4);
    w_hh = fill(gates * kH * kH, 0.5);
    b_ih = fill(gates * kH, 0.6);
    b_hh = fill(gates * kH, 0.7);
  }
  Var var(Tape& tape, const Vec& v, const Shape& s, DType dtype) const { return tape.variable(from_vector(v, s).to(dtype)); }
  CellWeights weights(Tape& tape, std::int64_t gates, DType dtype) const {
    return {var(tape, w_ih, {gates * kH, kI}, dtype), var(tape, w_hh, {gates * kH, kH}, dtype),
            var(tape, b_ih, {gates * kH}, dtype), var(tape, b_hh, {gates * kH}, dtype)};
  }
};

void expect_values(const Var& got, const Vec& want, double tol) {
  const auto g = to_vector<double>(got.value());
  ASSERT_EQ(g.size(), want.size());
  for (std::size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], want[i], tol) << i;
}

class Cells : public ::testing::TestWithParam<DType> {
 protected:
  double tol() const { return GetParam() == DType::float64 ? 1e-13 : 1e-6; }
};

TEST_P(Cells, RnnCellIsTanhOrReluOfTheSum) {
  const Values v(1);
  const Vec a = affine(v.x, v.w_ih, v.b_ih, kI, kH), b = affine(v.h, v.w_hh, v.b_hh, kH, kH);
  Vec tanh_want, relu_want;
  for (std::size_t i = 0; i < a.size(); ++i) {
    tanh_want.push_back(std::tanh(a[i] + b[i]));
    relu_want.push_back(std::max(0.0, a[i] + b[i]));
  }
  Tape tape;
  const auto w = v.weights(tape, 1, GetParam());
  const Var x = v.var(tape, v.x, {kB, kI}, GetParam()), h = v.var(tape, v.h, {kB, kH}, GetParam());
  expect_values(rnn_cell(x, h, w), tanh_want, tol());
  expect_values(rnn_cell(x, h, w, Nonlinearity::relu), relu_want, tol());
}

TEST_P(Cells, LstmCellFollowsTheGateEquations) {
  const Values v(4);
  const Vec a = affine(v.x, v.w_ih, v.b_ih, kI, 4 * kH), b = affine(v.h, v.w_hh, v.b_hh, kH, 4 * kH);
  Vec h_want, c_want;
  for (std::int64_t r = 0; r < kB; ++r)
    for (std::int64_t j = 0; j < kH; ++j) {
      auto gate = [&](int k) { return a[r * 4 * kH + k * kH + j] + b[r * 4 * kH + k * kH + j]; };
      const double c = sig(gate(1)) * v.c[r * kH + j] + sig(gate(0)) * std::tanh(gate(2));
      c_want.push_back(c);
      h_want.push_back(sig(gate(3)) * std::tanh(c));
    }
  Tape tape;
  const LstmState s = lstm_cell(v.var(tape, v.x, {kB, kI}, GetParam()), v.var(tape, v.h, {kB, kH}, GetParam()),
                                v.var(tape, v.c, {kB, kH}, GetParam()), v.weights(tape, 4, GetParam()));
  expect_values(s.h, h_want, tol());
  expect_values(s.c, c_want, tol());
}

TEST_P(Cells, GruCellFollowsPyTorchsEquations) {
  const Values v(3);
  const Vec a = affine(v.x, v.w_ih, v.b_ih, kI, 3 * kH), b = affine(v.h, v.w_hh, v.b_hh, kH, 3 * kH);
  Vec want;
  for (std::int64_t r = 0; r < kB; ++r)
    for (std::int64_t j = 0; j < kH; ++j) {
      auto at = [&](const Vec& m, int k) { return m[r * 3 * kH + k * kH + j]; };
      const double rg = sig(at(a, 0) + at(b, 0)), z = sig(at(a, 1) + at(b, 1));
      const double n = std::tanh(at(a, 2) + rg * at(b, 2));  // r scales W_hn h + b_hn
      want.push_back((1 - z) * n + z * v.h[r * kH + j]);
    }
  Tape tape;
  expect_values(gru_cell(v.var(tape, v.x, {kB, kI}, GetParam()), v.var(tape, v.h, {kB, kH}, GetParam()),
                         v.weights(tape, 3, GetParam())),
                want, tol());
}

INSTANTIATE_TEST_SUITE_P(BothDtypes, Cells, ::testing::Values(DType::float64, DType::float32),
                         [](const auto& info) { return std::string(name_of(info.param)); });

TEST(FusedOps, TensorAndVarFormsAgree) {
  Generator gen(3);
  const Tensor gates = normal({3, 8}, 0, 2, gen, DType::float64), c = normal({3, 2}, 0, 1, gen, DType::float64);
  const Tensor xp = normal({3, 6}, 0, 2, gen, DType::float64), hp = normal({3, 6}, 0, 2, gen, DType::float64);
  Tape tape;
  EXPECT_EQ(max_abs_diff(lstm_pointwise(gates, c), lstm_pointwise(Var(gates), Var(c)).value()), 0.0);
  EXPECT_EQ(max_abs_diff(gru_pointwise(xp, hp, c), gru_pointwise(Var(xp), Var(hp), Var(c)).value()), 0.0);
  const Tensor sum = xp + hp;
  EXPECT_LT(max_abs_diff(rnn_pointwise(xp, hp), tanh(sum)), 1e-15);
  EXPECT_EQ(max_abs_diff(rnn_pointwise(xp, hp, Nonlinearity::relu), relu(sum)), 0.0);
}

TEST(FusedOps, ErrorsNameTheArgumentsAndRecordNothing) {
  Tape tape;
  const Var g = tape.constant(zeros({2, 7}, DType::float64)), c = tape.constant(zeros({2, 2}, DType::float64));
  const Var c32 = tape.constant(zeros({2, 2})), g32 = tape.constant(zeros({2, 8}));
  expect_clean_failure<ShapeError>(tape, [&] { lstm_pointwise(g, c); }, {"lstm_pointwise", "'gates'", "[2, 7]", "'c'", "[2, 2]"});
  expect_clean_failure<DTypeError>(tape, [&] { lstm_pointwise(g32, c); }, {"lstm_pointwise", "float32"});
  expect_clean_failure<ShapeError>(tape, [&] { gru_pointwise(g, g, c); }, {"gru_pointwise", "'xproj'", "[2, 7]"});
  expect_clean_failure<ShapeError>(tape, [&] { rnn_pointwise(c, g); }, {"rnn_pointwise", "'xproj'", "'hproj'"});
  expect_clean_failure<DTypeError>(tape, [&] { rnn_pointwise(c, c32); }, {"rnn_pointwise", "float64", "float32"});
}

TEST(CellFunctions, ShapeErrorsRecordNothing) {
  Tape tape;
  const Values v(4);
  const CellWeights w = v.weights(tape, 4, DType::float64);
  const Var x = v.var(tape, v.x, {kB, kI}, DType::float64), h = v.var(tape, v.h, {kB, kH}, DType::float64);
  const Var wrong_x = tape.constant(zeros({kB, kI + 1}, DType::float64)), x32 = tape.constant(x.value().to(DType::float32));
  const Var c1 = tape.constant(zeros({1, kH}, DType::float64));
  expect_clean_failure<ShapeError>(tape, [&] { lstm_cell(wrong_x, h, h, w); }, {"lstm_cell", "'x' [2, 4]", "'w_ih' [8, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { gru_cell(x, h, w); }, {"gru_cell", "w_ih [3*H, I]"});
  expect_clean_failure<ShapeError>(tape, [&] { lstm_cell(x, h, c1, w); },
                                   {"lstm_cell", "'c' [1, 2]"});
  expect_clean_failure<DTypeError>(tape, [&] { lstm_cell(x32, h, h, w); }, {"lstm_cell", "float32"});
}

TEST(CellModules, PyTorchNamesShapesAndInit) {
  Generator gen(5);
  const LSTMCell lstm({.input_size = 3, .hidden_size = 16}, gen);
  const auto& p = lstm.named_parameters();
  ASSERT_EQ(p.size(), 4u);
  EXPECT_EQ(p[0].first, "weight_ih");
  EXPECT_EQ(p[1].first, "weight_hh");
  EXPECT_EQ(p[2].first, "bias_ih");
  EXPECT_EQ(p[3].first, "bias_hh");
  EXPECT_EQ(p[0].second.shape(), (Shape{64, 3}));
  EXPECT_EQ(p[1].second.shape(), (Shape{64, 16}));
  EXPECT_EQ(p[3].second.shape(), (Shape{64}));
  for (const auto& [name, s] : p) {
    const auto v = to_vector<double>(s.value());
    EXPECT_LE(*std::max_element(v.begin(), v.end()), 0.25) << name;  // U(-1/sqrt(16), 1/sqrt(16))
    EXPECT_GE(*std::min_element(v.begin(), v.end()), -0.25) << name;
  }
  const GRUCell gru({.input_size = 3, .hidden_size = 2, .bias = false}, gen);
  EXPECT_EQ(gru.named_parameters().size(), 2u);
  EXPECT_EQ(gru.parameter("weight_hh").shape(), (Shape{6, 2}));
  expect_error<ValueError>([&] { RNNCell({.input_size = 0, .hidden_size = 2}, gen); }, {"RNNCell", "input_size (0)"});
}

TEST(CellModules, MissingStatesAreZeros) {
  Generator gen(6);
  const RNNCell rnn({.input_size = 3, .hidden_size = 2, .nonlinearity = Nonlinearity::relu, .dtype = DType::float64}, gen);
  const LSTMCell lstm({.input_size = 3, .hidden_size = 2, .dtype = DType::float64}, gen);
  const GRUCell gru({.input_size = 3, .hidden_size = 2, .dtype = DType::float64}, gen);
  Tape tape;
  const Var x = tape.constant(normal({4, 3}, 0, 1, gen, DType::float64));
  const Var zero = tape.constant(zeros({4, 2}, DType::float64));
  EXPECT_EQ(max_abs_diff(rnn(x).value(), rnn(x, zero).value()), 0.0);
  EXPECT_EQ(max_abs_diff(gru(x).value(), gru(x, zero).value()), 0.0);
  EXPECT_EQ(max_abs_diff(lstm(x).c.value(), lstm(x, zero, zero).c.value()), 0.0);
  // The module is its function with its own parameters.
  EXPECT_EQ(max_abs_diff(rnn(x, zero).value(), rnn_cell(x, zero, rnn.weights().read(tape), Nonlinearity::relu).value()), 0.0);
  const Var wide = tape.constant(zeros({4, 5}, DType::float64));
  expect_clean_failure<ShapeError>(tape, [&] { gru(wide); }, {"gru_cell", "'x' [4, 5]"});
}

}  // namespace
}  // namespace recur::nn
