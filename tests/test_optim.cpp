// Optimizers beyond the torch trajectories (test_optim_torch.cpp): state names, save and
// restore through named_state, option errors, zero_grad, skipped parameters, and gradient
// clipping against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "optim_problem.hpp"

namespace recur {
namespace {

using namespace recur::optim;
using testing::expect_error;

std::vector<std::string> names(const NamedShared& named) {
  std::vector<std::string> out;
  for (const auto& [name, s] : named) out.push_back(name);
  return out;
}

// Two parameters with module-style names, float64.
NamedShared two_parameters() {
  return {{"lstm.weight_ih_l0", Shared(tensor({{0.5, -1.0, 2.0}, {1.5, 0.25, -0.75}}, DType::float64), "weight_ih_l0")},
          {"fc.bias", Shared(tensor({-0.3, 0.8}, DType::float64), "bias")}};
}

// The quartic problem's gradient for every parameter (coefficients fixed per element).
void set_gradients(NamedShared& params) {
  for (auto& [name, p] : params) {
    const Tensor v = p.value();
    p.zero_grad();
    p.accumulate_grad(testing::quartic_grad(v, full_like(v, 1.5), full_like(v, 0.25), full_like(v, 0.1)));
  }
}

std::vector<Tensor> snapshot(const NamedShared& named) {
  std::vector<Tensor> out;
  for (const auto& [name, s] : named) out.push_back(s.value().clone());
  return out;
}
void restore(NamedShared& named, const std::vector<Tensor>& values) {
  for (std::size_t i = 0; i < named.size(); ++i) named[i].second.assign(values[i]);
}

TEST(Optim, StateNamesFollowTorchKeys) {
  const NamedShared params = two_parameters();
  Adam adam(params, {.amsgrad = true});
  EXPECT_EQ(names(adam.named_state()),
            (std::vector<std::string>{"step", "lr", "lstm.weight_ih_l0.step", "lstm.weight_ih_l0.exp_avg",
                                      "lstm.weight_ih_l0.exp_avg_sq", "lstm.weight_ih_l0.max_exp_avg_sq",
                                      "fc.bias.step", "fc.bias.exp_avg", "fc.bias.exp_avg_sq",
                                      "fc.bias.max_exp_avg_sq"}));
  for (const auto& [name, s] : adam.named_state()) {
    EXPECT_EQ(s.name(), name);
    if (name == "lr") {
      EXPECT_EQ(s.dtype(), DType::float64);
      EXPECT_EQ(s.value().item<double>(), 1e-3);
    } else if (name.ends_with("step")) {
      EXPECT_EQ(s.dtype(), DType::int64);
      EXPECT_EQ(s.shape(), Shape{});
      EXPECT_EQ(s.value().item<std::int64_t>(), 0);
    } else {
      const Shared& p = name.starts_with("fc") ? params[1].second : params[0].second;
      EXPECT_EQ(s.shape(), p.shape()) << name;
      EXPECT_EQ(s.dtype(), DType::float64) << name;
      EXPECT_TRUE(allclose(s.value(), zeros_like(p.value()))) << name;
    }
  }
  // Buffers only where the options use them.
  EXPECT_EQ(names(SGD(params, {.lr = 0.1}).named_state()),
            (std::vector<std::string>{"step", "lr", "lstm.weight_ih_l0.step", "fc.bias.step"}));
  EXPECT_EQ(names(SGD(params, {.lr = 0.1, .momentum = 0.5}).named_state())[3], "lstm.weight_ih_l0.momentum_buffer");
  EXPECT_EQ(names(Adam(params).named_state()).size(), 8u);
  EXPECT_EQ(names(RMSprop(params, {.momentum = 0.9, .centered = true}).named_state()),
            (std::vector<std::string>{"step", "lr", "lstm.weight_ih_l0.step", "lstm.weight_ih_l0.square_avg",
                                      "lstm.weight_ih_l0.momentum_buffer", "lstm.weight_ih_l0.grad_avg",
                                      "fc.bias.step", "fc.bias.square_avg", "fc.bias.momentum_buffer",
                                      "fc.bias.grad_avg"}));
  const Adagrad adagrad(params, {.initial_accumulator_value = 0.3});
  const NamedShared state = adagrad.named_state();
  EXPECT_EQ(state[3].first, "lstm.weight_ih_l0.sum");
  EXPECT_TRUE(allclose(state[3].second.value(), full({2, 3}, 0.3, DType::float64)));
}

TEST(Optim, StepsInFloat32AndCountsSteps) {
  Shared w(tensor({1.0, -2.0}), "w");  // float32
  SGD sgd({{"w", w}}, {.lr = 0.5});
  w.accumulate_grad(tensor({0.25, 1.0}));
  const auto version = w.version();
  const Tensor held = w.value();  // as a tape holds what it read
  sgd.step();
  EXPECT_GT(w.version(), version);  // a step is a shared-variable update
  EXPECT_EQ(to_vector<float>(held), (std::vector<float>{1.0f, -2.0f}));  // copied, not overwritten
  EXPECT_EQ(w.dtype(), DType::float32);
  EXPECT_EQ(to_vector<float>(w.value()), (std::vector<float>{1.0f - 0.125f, -2.5f}));
  EXPECT_EQ(sgd.steps(), 1);
}

// Runs `extra` steps after `first` steps, once straight through and once after restoring
// the state saved at `first` into fresh parameters, optimizer and schedule; and once more
// after rewinding the original objects. All three must agree bit for bit.
using Build = std::function<std::pair<std::unique_ptr<Optimizer>, std::unique_ptr<LRScheduler>>(NamedShared)>;

void check_resume(const Build& build, int first, int extra) {
  NamedShared params = two_parameters();
  auto [opt, sched] = build(params);
  auto step = [&](NamedShared& ps, Optimizer& o, LRScheduler* s) {
    set_gradients(ps);
    o.step();
    if (s) s->step();
  };
  for (int i = 0; i < first; ++i) step(params, *opt, sched.get());
  auto all_state = [](Optimizer& o, LRScheduler* s) {
    NamedShared st = o.named_state();
    if (s) for (auto& e : s->named_state()) st.push_back(e);
    return st;
  };
  const std::vector<Tensor> saved_params = snapshot(params), saved_state = snapshot(all_state(*opt, sched.get()));
  for (int i = 0; i < extra; ++i) step(params, *opt, sched.get());
  const std::vector<double> straight = testing::flat_values(params);
  const double straight_lr = opt->lr();

  // Fresh objects, state assigned from the checkpoint.
  NamedShared fresh = two_parameters();
  restore(fresh, saved_params);
  auto [opt2, sched2] = build(fresh);
  NamedShared state2 = all_state(*opt2, sched2.get());
  ASSERT_EQ(names(state2), names(all_state(*opt, sched.get())));
  restore(state2, saved_state);
  EXPECT_EQ(opt2->steps(), first);
  if (sched2) {
    EXPECT_EQ(sched2->last_epoch(), first);
  }
  for (int i = 0; i < extra; ++i) step(fresh, *opt2, sched2.get());
  EXPECT_EQ(testing::flat_values(fresh), straight);
  EXPECT_EQ(opt2->lr(), straight_lr);
  EXPECT_EQ(opt2->steps(), first + extra);

  // The original objects rewound: nothing outside named_state carries over.
  restore(params, saved_params);
  NamedShared state1 = all_state(*opt, sched.get());
  restore(state1, saved_state);
  EXPECT_EQ(opt->steps(), first);
  for (int i = 0; i < extra; ++i) step(params, *opt, sched.get());
  EXPECT_EQ(testing::flat_values(params), straight);
}

template <class O, class Options>
Build plain(Options options) {
  return [options](NamedShared p) { return std::pair{std::unique_ptr<Optimizer>(new O(std::move(p), options)), std::unique_ptr<LRScheduler>()}; };
}

TEST(Optim, RestoredStateContinuesIdentically) {
  check_resume(plain<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9, .nesterov = true}), 4, 5);
  check_resume(plain<Adam>(AdamOptions{.lr = 0.05, .amsgrad = true}), 4, 5);
  check_resume(plain<AdamW>(AdamWOptions{.lr = 0.05}), 3, 6);
  check_resume(plain<RMSprop>(RMSpropOptions{.momentum = 0.5, .centered = true}), 5, 4);
  check_resume(plain<Adagrad>(AdagradOptions{.lr_decay = 0.1}), 5, 4);
  // Schedules: the optimizer's lr and the schedule's epoch both come back.
  check_resume([](NamedShared p) {
    auto o = std::make_unique<SGD>(std::move(p), SGDOptions{.lr = 0.1, .momentum = 0.9});
    auto s = std::make_unique<StepLR>(*o, 3, 0.5);
    return std::pair{std::unique_ptr<Optimizer>(std::move(o)), std::unique_ptr<LRScheduler>(std::move(s))};
  }, 4, 5);
  check_resume([](NamedShared p) {
    auto o = std::make_unique<Adam>(std::move(p), AdamOptions{.lr = 0.02});
    auto s = std::make_unique<CosineAnnealingLR>(*o, 6, 1e-3);
    return std::pair{std::unique_ptr<Optimizer>(std::move(o)), std::unique_ptr<LRScheduler>(std::move(s))};
  }, 5, 4);
}

TEST(Optim, StepsFollowTheRestoredStepValue) {
  const NamedShared params = two_parameters();
  Adagrad adagrad(params);
  adagrad.named_state()[0].second.assign(scalar(123, DType::int64));
  EXPECT_EQ(adagrad.steps(), 123);
  adagrad.named_state()[1].second.assign(scalar(0.25, DType::float64));
  EXPECT_EQ(adagrad.lr(), 0.25);
}

TEST(Optim, PerParameterStepDrivesTheUpdate) {
  // Adagrad's lr_decay uses the parameter's own step: restoring "w.step" = 3 makes the next
  // step the 4th, so clr = lr / (1 + 3 * lr_decay).
  Shared w(tensor({2.0}, DType::float64), "w");
  Adagrad adagrad({{"w", w}}, {.lr = 1.0, .lr_decay = 0.5, .eps = 0});
  adagrad.named_state()[2].second.assign(scalar(3, DType::int64));
  w.accumulate_grad(tensor({0.5}, DType::float64));
  adagrad.step();
  // sum = 0.25, std = 0.5, clr = 1 / 2.5: w = 2 - 0.4 * 0.5 / 0.5
  EXPECT_DOUBLE_EQ(w.value().item<double>(), 2.0 - 0.4);
  EXPECT_EQ(adagrad.named_state()[2].second.value().item<std::int64_t>(), 4);
}

TEST(Optim, BadOptionsNameTheOptimizerAndArgument) {
  const NamedShared params = two_parameters();
  expect_error<ValueError>([&] { Adam(params, {.lr = -1}); }, {"recur::Adam", "'lr'", ">= 0", "-1"});
  expect_error<ValueError>([&] { Adam(params, {.betas = {1.0, 0.999}}); }, {"Adam", "'betas[0]'", "[0, 1)"});
  expect_error<ValueError>([&] { Adam(params, {.betas = {0.9, -0.1}}); }, {"Adam", "'betas[1]'"});
  expect_error<ValueError>([&] { AdamW(params, {.betas = {0.9, 1.5}}); }, {"recur::AdamW", "'betas[1]'"});
  expect_error<ValueError>([&] { Adam(params, {.eps = NAN}); }, {"Adam", "'eps'", "nan"});
  expect_error<ValueError>([&] { AdamW(params, {.weight_decay = -0.1}); }, {"AdamW", "'weight_decay'"});
  expect_error<ValueError>([&] { SGD(params, {}); }, {"recur::SGD", "'lr'", "nan"});  // lr is required
  expect_error<ValueError>([&] { SGD(params, {.lr = 0.1, .momentum = -0.5}); }, {"SGD", "'momentum'"});
  expect_error<ValueError>([&] { SGD(params, {.lr = 0.1, .nesterov = true}); }, {"SGD", "'nesterov'", "momentum"});
  expect_error<ValueError>([&] { SGD(params, {.lr = 0.1, .momentum = 0.9, .dampening = 0.1, .nesterov = true}); },
                           {"SGD", "'nesterov'", "dampening"});
  expect_error<ValueError>([&] { RMSprop(params, {.alpha = -0.9}); }, {"RMSprop", "'alpha'"});
  expect_error<ValueError>([&] { RMSprop(params, {.momentum = -1}); }, {"RMSprop", "'momentum'"});
  expect_error<ValueError>([&] { Adagrad(params, {.lr_decay = -1}); }, {"Adagrad", "'lr_decay'"});
  expect_error<ValueError>([&] { Adagrad(params, {.initial_accumulator_value = -1}); },
                           {"Adagrad", "'initial_accumulator_value'"});
  // Parameter lists.
  expect_error<ValueError>([&] { Adam(NamedShared{}); }, {"Adam", "empty parameter list"});
  expect_error<ValueError>([&] { Adam({{"a", params[0].second}, {"b", params[0].second}}); }, {"Adam", "'a'", "'b'"});
  expect_error<ValueError>([&] { Adam({{"a", params[0].second}, {"a", params[1].second}}); }, {"Adam", "'a'", "twice"});
  expect_error<ValueError>([&] { Adam({{"a", Shared()}}); }, {"Adam", "'a'", "null"});
  expect_error<DTypeError>([&] { Adam({{"i", Shared(arange(3), "i")}}); }, {"Adam", "'i'", "int64"});
  // Schedules.
  SGD sgd(params, {.lr = 0.1});
  expect_error<ValueError>([&] { StepLR(sgd, 0); }, {"StepLR", "'step_size'"});
  expect_error<ValueError>([&] { ExponentialLR(sgd, -0.5); }, {"ExponentialLR", "'gamma'"});
  expect_error<ValueError>([&] { CosineAnnealingLR(sgd, 0); }, {"CosineAnnealingLR", "'t_max'"});
}

TEST(Optim, RejectedLearningRateChangesNothing) {
  SGD sgd(two_parameters(), {.lr = 0.1});
  const auto version = sgd.named_state()[1].second.version();
  expect_error<ValueError>([&] { sgd.set_lr(-0.5); }, {"SGD::set_lr", "'lr'", "-0.5"});
  expect_error<ValueError>([&] { sgd.set_lr(NAN); }, {"SGD::set_lr", "'lr'"});
  EXPECT_EQ(sgd.lr(), 0.1);
  EXPECT_EQ(sgd.named_state()[1].second.version(), version);
  sgd.set_lr(0.02);
  EXPECT_EQ(sgd.lr(), 0.02);
}

TEST(Optim, ZeroGradDropsEveryGradient) {
  NamedShared params = two_parameters();
  Adam adam(params);
  set_gradients(params);
  for (auto& [name, p] : params) EXPECT_TRUE(p.has_grad());
  adam.zero_grad();
  for (auto& [name, p] : params) EXPECT_FALSE(p.has_grad());
  // Without gradients a step skips every parameter: values and per-parameter state stay.
  const std::vector<Tensor> before = snapshot(params);
  adam.step();
  EXPECT_EQ(adam.steps(), 1);
  for (std::size_t i = 0; i < params.size(); ++i)
    EXPECT_EQ(max_abs_diff(params[i].second.value(), before[i]), 0.0);
  for (const auto& [name, s] : adam.named_state())
    if (name != "step" && name != "lr") {
      EXPECT_EQ(max_abs_diff(s.value(), zeros_like(s.value())), 0.0) << name;
    }
}

TEST(Optim, SkipsParametersWithoutGradients) {
  NamedShared params = two_parameters();
  Adam adam(params, {.lr = 0.1});
  const Tensor bias_before = params[1].second.value().clone();
  Shared& w = params[0].second;
  const Tensor w0 = w.value().clone();
  w.accumulate_grad(ones_like(w0));
  adam.step();
  // The first Adam step moves every element by lr * g / (|g| + eps') = ~lr, against the gradient.
  const auto moved = to_vector<double>(w.value()), start = to_vector<double>(w0);
  for (std::size_t i = 0; i < moved.size(); ++i) EXPECT_NEAR(moved[i], start[i] - 0.1, 1e-7);
  EXPECT_EQ(max_abs_diff(params[1].second.value(), bias_before), 0.0);
  const NamedShared state = adam.named_state();
  EXPECT_EQ(state[2].first, "lstm.weight_ih_l0.step");
  EXPECT_EQ(state[2].second.value().item<std::int64_t>(), 1);
  EXPECT_EQ(state[5].first, "fc.bias.step");
  EXPECT_EQ(state[5].second.value().item<std::int64_t>(), 0);
  EXPECT_EQ(max_abs_diff(state[6].second.value(), zeros({2}, DType::float64)), 0.0);  // fc.bias.exp_avg
}

TEST(Optim, ScheduleClosedForms) {
  SGD sgd(two_parameters(), {.lr = 0.8});
  StepLR step_lr(sgd, 3, 0.5);
  const double pi = std::acos(-1.0);
  std::vector<double> seen;
  for (int e = 1; e <= 7; ++e) {
    step_lr.step();
    seen.push_back(sgd.lr());
  }
  EXPECT_EQ(seen, (std::vector<double>{0.8, 0.8, 0.4, 0.4, 0.4, 0.2, 0.2}));
  EXPECT_EQ(step_lr.last_epoch(), 7);
  EXPECT_EQ(step_lr.base_lr(), 0.8);
  EXPECT_EQ(names(step_lr.named_state()), (std::vector<std::string>{"base_lr", "last_epoch"}));

  SGD sgd2(two_parameters(), {.lr = 1.0});
  ExponentialLR exp_lr(sgd2, 0.5);
  for (int e = 0; e < 4; ++e) exp_lr.step();
  EXPECT_DOUBLE_EQ(sgd2.lr(), 1.0 / 16);

  SGD sgd3(two_parameters(), {.lr = 1.0});
  CosineAnnealingLR cos_lr(sgd3, 4, 0.2);
  EXPECT_DOUBLE_EQ(cos_lr.lr_at(0), 1.0);
  EXPECT_DOUBLE_EQ(cos_lr.lr_at(2), 0.6);   // halfway: (1 + 0.2) / 2
  EXPECT_DOUBLE_EQ(cos_lr.lr_at(4), 0.2);   // the minimum at t_max
  EXPECT_DOUBLE_EQ(cos_lr.lr_at(6), 0.6);   // and back up, as PyTorch's
  EXPECT_DOUBLE_EQ(cos_lr.lr_at(1), 0.2 + 0.8 * (1 + std::cos(pi / 4)) / 2);
}

TEST(Optim, ClipGradNormScalesByTheTotalNorm) {
  Shared a(tensor({3.0, 0.0}, DType::float64), "a"), b(tensor({4.0}, DType::float64), "b"), none(tensor({1.0}), "none");
  a.accumulate_grad(tensor({3.0, 0.0}, DType::float64));
  b.accumulate_grad(tensor({-4.0}, DType::float64));
  const Tensor held = a.grad();  // a caller's copy of the gradient must not change
  const double norm = clip_grad_norm(std::vector<Shared>{a, none, b}, 2.5);
  EXPECT_DOUBLE_EQ(norm, 5.0);
  const double coef = 2.5 / (5.0 + 1e-6);
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{3.0 * coef, 0.0}));
  EXPECT_EQ(to_vector<double>(b.grad()), (std::vector<double>{-4.0 * coef}));
  EXPECT_EQ(to_vector<double>(held), (std::vector<double>{3.0, 0.0}));
  EXPECT_FALSE(none.has_grad());

  // Below max_norm nothing changes; infinity norm is the largest magnitude; p = 1 sums.
  EXPECT_DOUBLE_EQ(clip_grad_norm(NamedShared{{"a", a}, {"b", b}}, 100.0), 2.5 / (5.0 + 1e-6) * 5.0);
  EXPECT_EQ(to_vector<double>(b.grad()), (std::vector<double>{-4.0 * coef}));
  b.zero_grad();
  b.accumulate_grad(tensor({-4.0}, DType::float64));
  EXPECT_DOUBLE_EQ(clip_grad_norm(std::vector<Shared>{b}, 1.0, kInfNorm), 4.0);
  EXPECT_DOUBLE_EQ(b.grad().item<double>(), -4.0 / (4.0 + 1e-6));
  a.zero_grad();
  a.accumulate_grad(tensor({1.0, -2.0}, DType::float64));
  EXPECT_DOUBLE_EQ(clip_grad_norm(std::vector<Shared>{a}, 10.0, 1.0), 3.0);
  EXPECT_DOUBLE_EQ(clip_grad_norm(std::vector<Shared>{none}, 1.0), 0.0);  // no gradients

  expect_error<ValueError>([&] { clip_grad_norm(std::vector<Shared>{a}, -1.0); }, {"clip_grad_norm", "'max_norm'"});
  expect_error<ValueError>([&] { clip_grad_norm(std::vector<Shared>{a}, 1.0, 0.0); }, {"clip_grad_norm", "'norm_type'"});
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{1.0, -2.0}));  // untouched by the failures
}

TEST(Optim, ClipGradValueClampsInPlace) {
  Shared w(tensor({0.0, 0.0, 0.0}), "w");  // float32
  w.accumulate_grad(tensor({-3.0, 0.25, 2.0}));
  const Tensor held = w.grad();
  clip_grad_value(std::vector<Shared>{w}, 0.5);
  EXPECT_EQ(to_vector<float>(w.grad()), (std::vector<float>{-0.5f, 0.25f, 0.5f}));
  EXPECT_EQ(to_vector<float>(held), (std::vector<float>{-3.0f, 0.25f, 2.0f}));
  expect_error<ValueError>([&] { clip_grad_value(NamedShared{{"w", w}}, -1.0); }, {"clip_grad_value", "'clip'"});
}

}  // namespace
}  // namespace recur
