#pragma once
// The small float64 models the MPI tests train: an LSTM regression over streams with
// truncated BPTT, and an MLP over independent examples; and the comparison of their
// parameters.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include <recur/recur.hpp>

namespace recur::distributed::testing {

constexpr DType f64 = DType::float64;
constexpr std::int64_t kInput = 3, kHidden = 5, kOutput = 2;

// LSTM -> Linear, predicting a target per step.
class LstmRegression : public Module {
 public:
  explicit LstmRegression(std::uint64_t seed) : LstmRegression(Generator(seed)) {}
  // state {h, c}: [1, B, H] each. Returns the summed per-step mean squared error of the
  // steps from `from` on, and the final state.
  nn::ChunkResult operator()(std::span<const Var> state, const Tensor& inputs, const Tensor& targets,
                             std::int64_t from) const {
    nn::RecurrentOutput r = lstm_(Var(inputs), state[0], state[1]);
    const std::int64_t n = inputs.shape()[0];
    Var loss;
    if (from < n) {
      const Var prediction = head_(slice(r.output, 0, from, n));
      loss = mse(prediction, Var(slice(targets, 0, from, n))) * static_cast<double>(n - from);
    }
    return {loss, {r.h_n, r.c_n}};
  }

 private:
  explicit LstmRegression(Generator gen)
      : lstm_({.input_size = kInput, .hidden_size = kHidden, .dtype = f64}, gen), head_(kHidden, kOutput, gen, true, f64) {
    register_module("lstm", lstm_);
    register_module("head", head_);
  }
  nn::LSTM lstm_;
  nn::Linear head_;
};

// Linear -> tanh -> Linear.
class Mlp : public Module {
 public:
  explicit Mlp(std::uint64_t seed) : Mlp(Generator(seed)) {}
  Var operator()(const Var& x) const { return second_(tanh(first_(x))); }

 private:
  explicit Mlp(Generator gen) : first_(kInput, 8, gen, true, f64), second_(8, kOutput, gen, true, f64) {
    register_module("first", first_);
    register_module("second", second_);
  }
  nn::Linear first_, second_;
};

inline std::vector<Tensor> values_of(const Module& m) {
  std::vector<Tensor> v;
  for (const auto& p : m.parameters()) v.push_back(p.value().clone());
  return v;
}

// max |a - b| / max |b| over each tensor, the worst of them.
inline double worst_relative_difference(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  EXPECT_EQ(a.size(), b.size());
  double worst = 0;
  for (std::size_t k = 0; k < a.size() && k < b.size(); ++k) {
    double diff = 0, scale = 0;
    for (std::int64_t i = 0; i < b[k].numel(); ++i) {
      diff = std::max(diff, std::abs(a[k].data<double>()[i] - b[k].data<double>()[i]));
      scale = std::max(scale, std::abs(b[k].data<double>()[i]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

inline void expect_bitwise_equal(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t k = 0; k < a.size(); ++k) {
    ASSERT_EQ(a[k].nbytes(), b[k].nbytes());
    EXPECT_EQ(std::memcmp(a[k].raw_data(), b[k].raw_data(), a[k].nbytes()), 0) << "tensor " << k;
  }
}

}  // namespace recur::distributed::testing
