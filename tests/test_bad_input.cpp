// Bad input through the public API (issue 15): each case is either correct or a clear
// recur::Error that changes nothing (tape size, Shared values and versions, optimizer
// state, stream position).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <recur/ops/nn/recurrent.hpp>
#include <recur/ops/nn/tbptt.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;

constexpr DType f64 = DType::float64;
constexpr double inf = std::numeric_limits<double>::infinity();
constexpr double nan = std::numeric_limits<double>::quiet_NaN();

using testing::values;

// ---- binary_cross_entropy_with_logits at infinite logits ----------------------------

TEST(BadInput, BceWithInfiniteLogitsGivesTheLimitsAndTheirGradients) {
  // Per element: softplus(x) - x t tends to 0 where the target agrees with the sign of an
  // infinite logit (t = 1 at +inf, t = 0 at -inf) and to +inf otherwise.
  Tape tape;
  Var x = tape.variable(tensor({inf, inf, -inf, -inf, inf, -inf}, f64));
  Var t = tape.variable(tensor({1, 0, 0, 1, 0.25, 0.75}, f64));
  const Var per = binary_cross_entropy_with_logits(x, t, Reduction::none);
  EXPECT_EQ(values(per.value()), (std::vector<double>{0, inf, 0, inf, inf, inf}));
  tape.backward(sum(per));
  // d/dx = sigmoid(x) - t (finite), d/dt = -x.
  EXPECT_EQ(values(x.grad()), (std::vector<double>{0, 1, 0, -1, 0.75, -0.75}));
  EXPECT_EQ(values(t.grad()), (std::vector<double>{-inf, -inf, inf, inf, -inf, inf}));
}

TEST(BadInput, BceMeanOverInfiniteAndFiniteLogitsIsFinite) {
  Tape tape;
  Var x = tape.variable(tensor({inf, -inf, 2.0}, f64));
  Var t = tape.variable(tensor({1, 0, 0.5}, f64));
  const Var loss = binary_cross_entropy_with_logits(x, t);
  const double finite_term = 2.0 - 2.0 * 0.5 + std::log1p(std::exp(-2.0));
  EXPECT_NEAR(loss.value().item(), finite_term / 3, 1e-15);
  tape.backward(loss);
  const double sig = 1 / (1 + std::exp(-2.0));
  const std::vector<double> dx = values(x.grad());
  EXPECT_EQ(dx[0], 0.0);
  EXPECT_EQ(dx[1], 0.0);
  EXPECT_NEAR(dx[2], (sig - 0.5) / 3, 1e-15);
  // Tensor form too, and NaN stays NaN.
  EXPECT_EQ(binary_cross_entropy_with_logits(tensor({inf, -inf}, f64), tensor({1, 0}, f64)).item(), 0.0);
  EXPECT_TRUE(std::isnan(binary_cross_entropy_with_logits(tensor({nan}, f64), tensor({0}, f64)).item()));
}

// ---- truncate_gradient of the recurrent layers --------------------------------------

TEST(BadInput, RecurrentLayersRejectTruncateGradientBelowMinusOne) {
  Generator gen(3);
  for (std::int64_t k : {-5, -2}) {
    const nn::RecurrentOptions bad{.input_size = 2, .hidden_size = 3, .truncate_gradient = k};
    const std::string shown = std::to_string(k);
    expect_error<ValueError>([&] { nn::RNN(bad, gen); }, {"recur::RNN", "'truncate_gradient'", shown, "-1", ">= 0"});
    expect_error<ValueError>([&] { nn::LSTM(bad, gen); }, {"recur::LSTM", "'truncate_gradient'", shown});
    expect_error<ValueError>([&] { nn::GRU(bad, gen); }, {"recur::GRU", "'truncate_gradient'", shown});
  }
  for (std::int64_t k : {-1, 0, 2}) {
    const nn::LSTM lstm({.input_size = 2, .hidden_size = 3, .truncate_gradient = k}, gen);
    Tape tape;
    const auto out = lstm(tape.variable(ones({4, 1, 2})));
    EXPECT_EQ(out.output.shape(), (Shape{4, 1, 3}));
  }
}

// ---- repeated axes in reductions ----------------------------------------------------

TEST(BadInput, ReductionsRejectARepeatedAxis) {
  Tape tape;
  Var x = tape.variable(ones({2, 3, 4}, f64));
  expect_clean_failure<AxisError>(tape, [&] { sum(x, {0, 0}); }, {"recur::sum", "'axes'", "[0, 0]", "[2, 3, 4]"});
  // The same axis written once negative.
  expect_clean_failure<AxisError>(tape, [&] { mean(x, {1, -2}); }, {"recur::mean", "[1, -2]", "axis 1 twice"});
  expect_clean_failure<AxisError>(tape, [&] { max(x, {2, -1, 0}, true); }, {"recur::max", "[2, -1, 0]"});
  expect_clean_failure<AxisError>(tape, [&] { logsumexp(x, {0, 1, 0}); }, {"recur::logsumexp", "[2, 3, 4]"});
  expect_error<AxisError>([&] { sum(ones({2, 3}), {-1, 1}); }, {"recur::sum", "[-1, 1]", "[2, 3]"});
  // Distinct axes in any order are fine.
  EXPECT_EQ(sum(x, {2, 0}).shape(), (Shape{3}));
}

// ---- non-finite hyperparameters -----------------------------------------------------

TEST(BadInput, OptimizersRejectNonFiniteHyperparameters) {
  const NamedShared params{{"w", Shared(ones({3}, f64), "w")}};
  for (double bad : {inf, -inf, nan}) {
    expect_error<ValueError>([&] { optim::SGD(params, {.lr = bad}); }, {"recur::SGD", "'lr'", "finite"});
    expect_error<ValueError>([&] { optim::Adam(params, {.lr = bad}); }, {"recur::Adam", "'lr'", "finite"});
    expect_error<ValueError>([&] { optim::AdamW(params, {.lr = bad}); }, {"recur::AdamW", "'lr'", "finite"});
    expect_error<ValueError>([&] { optim::RMSprop(params, {.lr = bad}); }, {"recur::RMSprop", "'lr'", "finite"});
    expect_error<ValueError>([&] { optim::Adagrad(params, {.lr = bad}); }, {"recur::Adagrad", "'lr'", "finite"});
    expect_error<ValueError>([&] { optim::Adam(params, {.eps = bad}); }, {"recur::Adam", "'eps'"});
    expect_error<ValueError>([&] { optim::Adam(params, {.weight_decay = bad}); }, {"recur::Adam", "'weight_decay'"});
    expect_error<ValueError>([&] { optim::SGD(params, {.lr = 0.1, .momentum = bad}); }, {"recur::SGD", "'momentum'"});
    expect_error<ValueError>([&] { optim::SGD(params, {.lr = 0.1, .dampening = bad}); }, {"recur::SGD", "'dampening'"});
    expect_error<ValueError>([&] { optim::RMSprop(params, {.alpha = bad}); }, {"recur::RMSprop", "'alpha'"});
    expect_error<ValueError>([&] { optim::Adagrad(params, {.lr_decay = bad}); }, {"recur::Adagrad", "'lr_decay'"});
  }
  // set_lr and the schedules: the learning rate and the schedule stay as they were.
  optim::Adam adam(params, {.lr = 0.01});
  const auto version = adam.named_state()[1].second.version();
  expect_error<ValueError>([&] { adam.set_lr(inf); }, {"recur::Adam::set_lr", "'lr'", "inf"});
  expect_error<ValueError>([&] { adam.set_lr(nan); }, {"recur::Adam::set_lr", "'lr'", "nan"});
  EXPECT_EQ(adam.lr(), 0.01);
  EXPECT_EQ(adam.named_state()[1].second.version(), version);
  expect_error<ValueError>([&] { optim::ExponentialLR(adam, inf); }, {"recur::ExponentialLR", "'gamma'"});
  expect_error<ValueError>([&] { optim::StepLR(adam, 2, nan); }, {"recur::StepLR", "'gamma'"});
  expect_error<ValueError>([&] { optim::CosineAnnealingLR(adam, 5, inf); }, {"recur::CosineAnnealingLR", "'eta_min'"});
  EXPECT_EQ(adam.lr(), 0.01);
}

// ---- clip_grad_norm with an infinite gradient ---------------------------------------

TEST(BadInput, ClipGradNormOfANonFiniteGradientMakesNoNaN) {
  Shared a(tensor({3, 4}, f64), "a"), b(tensor({1, 2}, f64), "b");
  const NamedShared params{{"layer.a", a}, {"layer.b", b}};
  for (double bad : {inf, -inf, nan}) {
    a.zero_grad();
    b.zero_grad();
    a.accumulate_grad(tensor({0.5, -1}, f64));
    b.accumulate_grad(tensor({bad, 2}, f64));
    const std::vector<double> grad_a = values(a.grad()), grad_b = values(b.grad());
    // error_if_nonfinite: a ValueError naming the norm and the parameter; nothing changes.
    expect_error<ValueError>([&] { optim::clip_grad_norm(params, 1.0, 2.0, true); },
                             {"recur::clip_grad_norm", std::isnan(bad) ? "nan" : "inf", "'layer.b'", "[2]",
                              "error_if_nonfinite"});
    expect_error<ValueError>([&] { optim::clip_grad_norm(std::vector<Shared>{a, b}, 1.0, optim::kInfNorm, true); },
                             {"recur::clip_grad_norm", "'b'"});
    // Without it (the default): the non-finite norm is returned, the gradients stay.
    const double norm = optim::clip_grad_norm(params, 1.0);
    if (std::isnan(bad)) EXPECT_TRUE(std::isnan(norm));
    else EXPECT_EQ(norm, inf);
    EXPECT_EQ(values(a.grad()), grad_a);
    const std::vector<double> after_b = values(b.grad());
    EXPECT_EQ(after_b[1], 2.0);
    if (std::isnan(bad)) EXPECT_TRUE(std::isnan(after_b[0]));
    else EXPECT_EQ(after_b[0], bad);
  }
  // Finite gradients are clipped as before.
  b.zero_grad();
  b.accumulate_grad(tensor({0, 0}, f64));
  EXPECT_NEAR(optim::clip_grad_norm(params, 1.0, 2.0, true), std::sqrt(1.25), 1e-15);
  EXPECT_NEAR(values(a.grad())[0], 0.5 / (std::sqrt(1.25) + 1e-6), 1e-12);
}

// ---- TruncatedBptt::feed when the model throws --------------------------------------

// h_t = w h_{t-1} + x_t, loss_t = h_t^2 / 2; throws on a window that starts at `poison`.
nn::ChunkModel throwing_rnn(const Shared& w, const std::int64_t* poison, const std::int64_t* start) {
  return [w, poison, start](std::span<const Var> state, const Tensor& xs, const Tensor&, std::int64_t count_from) {
    if (*start == *poison) throw std::runtime_error("model failed");
    Var h = state[0], loss;
    for (std::int64_t t = 0; t < xs.shape()[0]; ++t) {
      h = Var(w) * h + Var(index(xs, 0, t));
      if (t >= count_from) loss = loss.defined() ? loss + h * h * 0.5 : h * h * 0.5;
    }
    return nn::ChunkResult{loss, {h}};
  };
}

TEST(BadInput, FailedTbpttFeedLeavesTheStreamAsItWas) {
  const Tensor xs = arange(0.0, 12.0, 1.0, f64) * 0.1;  // 12 steps
  auto piece = [&](std::int64_t from, std::int64_t to) { return slice(xs, 0, from, to).clone(); };
  // Reference: the stream fed in one go, never failing; the windows' gradients in order.
  std::int64_t never = -1, start = 0;
  std::vector<double> expected;
  {
    Shared w(full({}, 0.9, f64), "w");
    nn::TruncatedBptt ref({.k1 = 3}, {full({}, 0.2, f64)}, throwing_rnn(w, &never, &start));
    ref.feed(xs, Tensor(), [&](const nn::WindowReport&) {
      expected.push_back(w.grad().item());
      w.zero_grad();
    });
    ASSERT_EQ(expected.size(), 4u);
  }

  Shared w(full({}, 0.9, f64), "w");
  std::int64_t poison = 0;
  nn::TruncatedBptt tbptt({.k1 = 3}, {full({}, 0.2, f64)}, throwing_rnn(w, &poison, &start));
  std::vector<double> got;
  auto after = [&](const nn::WindowReport& r) {
    got.push_back(w.grad().item());
    w.zero_grad();
    start = r.end;
  };
  // The first window fails: nothing moves.
  expect_error<std::runtime_error>([&] { tbptt.feed(piece(0, 5), Tensor(), after); }, {"model failed"});
  EXPECT_EQ(tbptt.position(), 0);
  EXPECT_EQ(tbptt.carried_position(), 0);
  EXPECT_EQ(tbptt.carried_state()[0].item(), 0.2);
  EXPECT_FALSE(w.has_grad());
  // A piece of three windows whose second fails: the first stays trained, the rest is not kept.
  poison = 3;
  expect_error<std::runtime_error>([&] { tbptt.feed(piece(0, 9), Tensor(), after); }, {"model failed"});
  EXPECT_EQ(tbptt.position(), 3);
  EXPECT_EQ(tbptt.carried_position(), 3);
  EXPECT_EQ(got.size(), 1u);
  EXPECT_FALSE(w.has_grad());
  // Feeding the rest carries on exactly as the stream that never failed.
  poison = -1;
  tbptt.feed(piece(3, 12), Tensor(), after);
  EXPECT_EQ(tbptt.position(), 12);
  EXPECT_EQ(got, expected);
}

// ---- a tensor larger than memory ----------------------------------------------------

TEST(BadInput, TensorLargerThanMemoryIsAMemoryErrorNamingShapeAndBytes) {
  // 2^35 float64 elements: 256 GiB, refused by the system at once.
  expect_error<MemoryError>([] { zeros({std::int64_t{1} << 35}, f64); },
                            {"[34359738368]", "274877906944 bytes", "256 GiB", "float64"});
  // An op whose output would need it records nothing.
  Tape tape;
  Var a = tape.variable(ones({std::int64_t{1} << 18, 1}, f64)), b = tape.variable(ones({1, std::int64_t{1} << 17}, f64));
  expect_clean_failure<MemoryError>(tape, [&] { a + b; }, {"[262144, 131072]", "274877906944 bytes"});
  // The pool and the library go on working.
  EXPECT_EQ(sum(ones({4}, f64)).item(), 4.0);
}

}  // namespace
}  // namespace recur
