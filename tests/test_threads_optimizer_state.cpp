// Reading an optimizer's state on one thread while step() runs on another: the reads are
// race-free (this file also runs under ThreadSanitizer, see scripts/test.sh) and each one
// sees the state between two steps, never part of a step.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <recur/recur.hpp>

#include "file_helpers.hpp"

namespace recur {
namespace {

constexpr int kSteps = 40;
constexpr std::int64_t kSize = 4096;

// The gradient of step k: the same on every run, so two runs give bit-identical states.
Tensor gradient(int k, std::int64_t salt) {
  Tensor g = Tensor::empty({kSize}, DType::float64);
  for (std::int64_t i = 0; i < kSize; ++i) g.data<double>()[i] = std::sin(0.01 * static_cast<double>(i * (k + 1) + salt));
  return g;
}

struct Training {
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

// What a checkpoint holds, in short: the sum of each member, by member name.
using Fingerprint = std::map<std::string, double>;
Fingerprint fingerprint(const NamedTensors& members) {
  Fingerprint f;
  for (const auto& [name, t] : members)
    if (name.rfind("meta/", 0) != 0) f[name] = total(t);
  return f;
}
// The same of a training state, read on the calling thread.
Fingerprint fingerprint(const TrainingState& state) {
  NamedTensors members;
  for (const auto& [name, s] : state.parameters) members.emplace_back("param/" + name, s.value());
  for (const auto& [name, s] : state.optimizer_state) members.emplace_back("optim/" + name, s.value());
  return fingerprint(members);
}

class ThreadsOptimizerState : public testing::TempDirTest {};

TEST_F(ThreadsOptimizerState, CheckpointSavedWhileAnotherThreadStepsHoldsTheStateBetweenTwoSteps) {
  // The reference: the state after each number of steps, on one thread.
  std::vector<Fingerprint> expected;
  {
    Training ref;
    for (int k = 0; k <= kSteps; ++k) {
      if (k > 0) ref.step(k);
      expected.push_back(fingerprint(ref.state()));
    }
  }

  // Step k starts once the reader has begun its k-th save, so that saves and steps overlap
  // (ThreadSanitizer needs no overlap in time to see a race, only no ordering between two
  // accesses; this keeps the check of consistency meaningful without it).
  Training run;
  std::atomic<int> saves_begun{0};
  std::atomic<bool> stepping{true};
  std::thread stepper([&] {
    for (int k = 1; k <= kSteps; ++k) {
      while (saves_begun.load() < k) std::this_thread::yield();
      run.step(k);
    }
    stepping = false;
  });
  std::vector<std::string> mismatches;
  int saves = 0, between = 0;
  while (stepping) {
    saves = ++saves_begun;
    double sum_read = 0;  // plain reads of the state's values, racing the step too
    for (const auto& [name, s] : run.adam.named_state()) sum_read += total(s.value());
    EXPECT_TRUE(std::isfinite(sum_read));
    save_checkpoint(file("live.npz"), run.state());
    const Fingerprint got = fingerprint(load_npz(file("live.npz")));
    const auto k = static_cast<std::int64_t>(got.at("optim/step"));
    if (k < 0 || k > kSteps || got != expected[static_cast<std::size_t>(k)])
      mismatches.push_back("save " + std::to_string(saves) + " (optim/step " + std::to_string(k) + ")");
    if (k > 0 && k < kSteps) ++between;
  }
  stepper.join();
  EXPECT_TRUE(mismatches.empty()) << mismatches.size() << " of " << saves
                                  << " checkpoints mix two steps, e.g. " << mismatches.front();
  std::cout << saves << " checkpoints saved, " << between << " of them between the first and last step\n";
  EXPECT_EQ(run.adam.steps(), kSteps);
  EXPECT_EQ(fingerprint(run.state()), expected.back());
}

}  // namespace
}  // namespace recur
