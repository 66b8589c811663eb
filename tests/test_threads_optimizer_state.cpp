// Reading an optimizer's state on one thread while step() runs on another: the reads are
// race-free (this file also runs under ThreadSanitizer, see scripts/test.sh) and each one
// sees the state between two steps, never part of a step.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <recur/recur.hpp>

#include "file_helpers.hpp"

namespace recur {
namespace {

constexpr int kSteps = 60;
constexpr std::int64_t kSize = 2048;

// The gradient of step k: the same on every run, so two runs give bit-identical states.
Tensor gradient(int k, std::int64_t salt) {
  Tensor g = Tensor::empty({kSize}, DType::float64);
  for (std::int64_t i = 0; i < kSize; ++i) g.data<double>()[i] = std::sin(0.01 * static_cast<double>(i * (k + 1) + salt));
  return g;
}

struct Run {
  NamedShared params{{"w", Shared(full({kSize}, 0.5, DType::float64), "w")},
                     {"b", Shared(full({kSize}, -0.25, DType::float64), "b")}};
  optim::Adam adam{params, {.lr = 1e-2, .weight_decay = 0.1, .amsgrad = true}};

  void step(int k) {
    for (std::size_t p = 0; p < params.size(); ++p) {
      params[p].second.zero_grad();
      params[p].second.accumulate_grad(gradient(k, static_cast<std::int64_t>(p) * 7));
    }
    adam.step();
  }
  TrainingState state() const { return {params, adam.named_state(), {}, {}, 0}; }
};

// The sum of a float64 or int64 tensor's elements.
double total(const Tensor& t) {
  double s = 0;
  for (std::int64_t i = 0; i < t.numel(); ++i)
    s += t.dtype() == DType::int64 ? static_cast<double>(t.data<std::int64_t>()[i]) : t.data<double>()[i];
  return s;
}

// What a checkpoint after k steps holds: the sum of each member, by member name.
using Fingerprint = std::map<std::string, double>;
Fingerprint fingerprint(const NamedTensors& members) {
  Fingerprint f;
  for (const auto& [name, t] : members)
    if (name != "meta/step") f[name] = total(t);
  return f;
}

class ThreadsOptimizerState : public testing::TempDirTest {};

TEST_F(ThreadsOptimizerState, CheckpointSavedWhileAnotherThreadStepsHoldsTheStateBetweenTwoSteps) {
  // The reference: the state after each number of steps, saved on one thread.
  std::vector<Fingerprint> expected;
  {
    Run ref;
    for (int k = 0; k <= kSteps; ++k) {
      if (k > 0) ref.step(k);
      save_checkpoint(file("ref.npz"), ref.state());
      expected.push_back(fingerprint(load_npz(file("ref.npz"))));
    }
  }

  Run run;
  std::atomic<bool> stepping{true};
  std::thread stepper([&] {
    for (int k = 1; k <= kSteps; ++k) run.step(k);
    stepping = false;
  });
  // Saves, and reads of the state's values, while the other thread steps.
  std::vector<std::string> mismatches;
  int saves = 0;
  while (stepping || saves == 0) {
    double sum_read = 0;
    for (const auto& [name, s] : run.adam.named_state()) sum_read += total(s.value());
    EXPECT_TRUE(std::isfinite(sum_read));
    save_checkpoint(file("live.npz"), run.state());
    ++saves;
    const NamedTensors saved = load_npz(file("live.npz"));
    const Fingerprint got = fingerprint(saved);
    const auto k = static_cast<std::int64_t>(got.at("optim/step"));
    if (k < 0 || k > kSteps || got != expected[static_cast<std::size_t>(k)])
      mismatches.push_back("save " + std::to_string(saves) + " (optim/step " + std::to_string(k) + ")");
  }
  stepper.join();
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << saves
                                  << " checkpoints mix two steps, e.g. " << mismatches.front();
  EXPECT_EQ(run.adam.steps(), kSteps);
  save_checkpoint(file("end.npz"), run.state());
  EXPECT_EQ(fingerprint(load_npz(file("end.npz"))), expected.back());
}

}  // namespace
}  // namespace recur
