// The optimizers, schedules and gradient clipping against torch.optim (PyTorch 1.13): 20
// steps of the fixture's problem (tests/fixtures/make_optim_fixtures.py, files in
// tests/data/optim/), every parameter checked after every step, in float64 (1e-6 relative)
// and float32 (1e-4). The CASES table of the script is spelled out again here.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <recur/recur.hpp>

#include "optim_problem.hpp"

namespace recur {
namespace {

using namespace recur::optim;
namespace fs = std::filesystem;

const fs::path kDir = fs::path(RECUR_TEST_DATA) / "optim";
constexpr int kSteps = 20;

using MakeOptimizer = std::function<std::unique_ptr<Optimizer>(NamedShared)>;
using MakeSchedule = std::function<std::unique_ptr<LRScheduler>(Optimizer&)>;

template <class O, class Options>
MakeOptimizer make(Options options) {
  return [options](NamedShared p) { return std::make_unique<O>(std::move(p), options); };
}
template <class S, class... Args>
MakeSchedule schedule(Args... args) {
  return [=](Optimizer& o) { return std::make_unique<S>(o, args...); };
}

struct Case {
  std::string name;
  MakeOptimizer optimizer;
  MakeSchedule schedule = nullptr;
  std::optional<std::pair<double, double>> clip_norm{};  // max_norm, norm_type
  std::optional<double> clip_value{};
  bool skip = false;  // gradients follow skip_mask.npy
};

const std::vector<Case>& cases() {
  static const std::vector<Case> all = {
      {"sgd", make<SGD>(SGDOptions{.lr = 0.1})},
      {"sgd_momentum", make<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1, .weight_decay = 0.01})},
      {"sgd_nesterov", make<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.8, .weight_decay = 0.05, .nesterov = true})},
      {"adam", make<Adam>(AdamOptions{.lr = 0.01})},
      {"adam_amsgrad_wd",
       make<Adam>(AdamOptions{.lr = 0.02, .betas = {0.8, 0.95}, .eps = 1e-6, .weight_decay = 0.1, .amsgrad = true})},
      {"adamw", make<AdamW>(AdamWOptions{.lr = 0.01})},
      {"adamw_amsgrad", make<AdamW>(AdamWOptions{.lr = 0.02, .betas = {0.85, 0.99}, .weight_decay = 0.2, .amsgrad = true})},
      {"rmsprop", make<RMSprop>(RMSpropOptions{.lr = 0.01})},
      {"rmsprop_momentum", make<RMSprop>(RMSpropOptions{.lr = 0.01, .momentum = 0.9})},
      {"rmsprop_centered", make<RMSprop>(RMSpropOptions{.lr = 0.01, .centered = true})},
      {"rmsprop_all", make<RMSprop>(RMSpropOptions{
                          .lr = 0.005, .alpha = 0.9, .eps = 1e-6, .weight_decay = 0.05, .momentum = 0.5, .centered = true})},
      {"adagrad", make<Adagrad>(AdagradOptions{.lr = 0.1})},
      {"adagrad_options", make<Adagrad>(AdagradOptions{
                              .lr = 0.1, .lr_decay = 0.05, .weight_decay = 0.05, .initial_accumulator_value = 0.1, .eps = 1e-8})},
      {"sgd_steplr", make<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9}), schedule<StepLR>(std::int64_t{5}, 0.5)},
      {"adam_exponentiallr", make<Adam>(AdamOptions{.lr = 0.02}), schedule<ExponentialLR>(0.9)},
      {"adamw_cosine", make<AdamW>(AdamWOptions{.lr = 0.02}), schedule<CosineAnnealingLR>(std::int64_t{8}, 1e-3)},
      {"sgd_clip_norm", make<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9}), nullptr, std::pair{2.0, 2.0}},
      {"adam_clip_norm_inf", make<Adam>(AdamOptions{.lr = 0.05}), nullptr, std::pair{12.0, kInfNorm}},
      {"rmsprop_clip_value", make<RMSprop>(RMSpropOptions{.lr = 0.01}), nullptr, std::nullopt, 0.5},
      {"sgd_momentum_skip", make<SGD>(SGDOptions{.lr = 0.05, .momentum = 0.9, .dampening = 0.1}), nullptr, {}, {}, true},
      {"adam_skip", make<Adam>(AdamOptions{.lr = 0.02}), nullptr, {}, {}, true},
      {"adamw_skip", make<AdamW>(AdamWOptions{.lr = 0.02, .weight_decay = 0.1}), nullptr, {}, {}, true},
      {"adagrad_options_skip",
       make<Adagrad>(AdagradOptions{.lr = 0.1, .lr_decay = 0.05, .initial_accumulator_value = 0.1}), nullptr, {}, {}, true},
  };
  return all;
}

Tensor load(const std::string& name) { return load_npy(kDir / (name + ".npy")); }

struct Problem {
  Tensor p[2], a[2], b[2], c[2];
  Tensor mask;  // int64 (steps, 2)
};

const Problem& problem() {
  static const Problem pr = [] {
    Problem out;
    for (int k = 0; k < 2; ++k) {
      const std::string s = std::to_string(k);
      out.p[k] = load("problem.p" + s);
      out.a[k] = load("problem.a" + s);
      out.b[k] = load("problem.b" + s);
      out.c[k] = load("problem.c" + s);
    }
    out.mask = load("skip_mask");
    return out;
  }();
  return pr;
}

// |got - want| <= rtol |want| + atol, element by element; reports the first failures.
void expect_close(const std::vector<double>& got, const std::vector<double>& want, double rtol, double atol,
                  const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int reported = 0;
  for (std::size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= rtol * std::abs(want[i]) + atol) && reported++ < 3)
      ADD_FAILURE() << what << " element " << i << ": " << got[i] << " vs torch " << want[i];
}

class TorchTrajectory : public ::testing::TestWithParam<std::tuple<std::size_t, DType>> {};

TEST_P(TorchTrajectory, EveryStepMatches) {
  const auto [index, dtype] = GetParam();
  const Case& c = cases()[index];
  const Problem& pr = problem();
  const std::string prefix = c.name + "." + std::string(name_of(dtype)) + ".";
  const double rtol = dtype == DType::float64 ? 1e-6 : 1e-4, atol = dtype == DType::float64 ? 1e-12 : 1e-6;

  NamedShared params{{"p0", Shared(pr.p[0].to(dtype), "p0")}, {"p1", Shared(pr.p[1].to(dtype), "p1")}};
  std::unique_ptr<Optimizer> opt = c.optimizer(params);
  std::unique_ptr<LRScheduler> sched = c.schedule ? c.schedule(*opt) : nullptr;
  const Tensor trajectory = load(prefix + "trajectory");
  const auto lrs = sched ? to_vector<double>(load(prefix + "lr")) : std::vector<double>{};
  const auto norms = c.clip_norm ? to_vector<double>(load(prefix + "norm")) : std::vector<double>{};
  ASSERT_EQ(trajectory.size(0), kSteps);

  for (int i = 0; i < kSteps; ++i) {
    SCOPED_TRACE(prefix + " step " + std::to_string(i));
    for (int k = 0; k < 2; ++k) {
      Shared& p = params[k].second;
      p.zero_grad();
      if (c.skip && pr.mask.at<std::int64_t>({i, k}) == 0) continue;
      p.accumulate_grad(testing::quartic_grad(p.value(), pr.a[k], pr.b[k], pr.c[k]));
    }
    if (c.clip_norm) {
      const double norm = clip_grad_norm(params, c.clip_norm->first, c.clip_norm->second);
      EXPECT_NEAR(norm, norms[i], rtol * norms[i]);
    }
    if (c.clip_value) clip_grad_value(params, *c.clip_value);
    opt->step();
    if (sched) {
      sched->step();
      EXPECT_NEAR(opt->lr(), lrs[i], 1e-12 * lrs[i]);
    }
    EXPECT_EQ(opt->steps(), i + 1);
    expect_close(testing::flat_values(params), to_vector<double>(trajectory[i]), rtol, atol, "parameters");
  }
}

std::string case_name(const ::testing::TestParamInfo<TorchTrajectory::ParamType>& info) {
  return cases()[std::get<0>(info.param)].name + "_" + std::string(name_of(std::get<1>(info.param)));
}

INSTANTIATE_TEST_SUITE_P(Optim, TorchTrajectory,
                         ::testing::Combine(::testing::Range<std::size_t>(0, 23),
                                            ::testing::Values(DType::float64, DType::float32)),
                         case_name);

TEST(OptimTorch, CaseTableCoversEveryFixture) {
  EXPECT_EQ(cases().size(), 23u);  // the Range above
  for (const Case& c : cases())
    for (const char* dtype : {"float64", "float32"})
      EXPECT_TRUE(fs::exists(kDir / (c.name + "." + dtype + ".trajectory.npy"))) << c.name;
}

}  // namespace
}  // namespace recur
