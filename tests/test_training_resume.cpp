// A training run stopped at a checkpoint and resumed in fresh objects continues bit for bit
// like the run that never stopped: LSTM parameters, Adam's moments, the LSTM state carried
// by truncated BPTT, and a random generator all go through the checkpoint.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <recur/recur.hpp>

namespace recur {
namespace {

constexpr std::int64_t B = 3, I = 4, H = 5, K = 6;  // batch, input, hidden, TBPTT chunk

class TrainingRun {
 public:
  TrainingRun() : gen_(11), noise_(12), lstm_({.input_size = I, .hidden_size = H}, gen_), head_(H, I, gen_),
          adam_(params(), {.lr = 0.01}),
          tbptt_({.k1 = K}, {zeros({1, B, H}), zeros({1, B, H})}, [this](auto state, auto& xs, auto& ys, auto from) {
            nn::RecurrentOutput r = lstm_(Var(xs), state[0], state[1]);
            Var err = head_(slice(r.output, 0, from, xs.shape()[0])) - Var(slice(ys, 0, from, ys.shape()[0]));
            return nn::ChunkResult{sum(err * err) * (1.0 / (B * I)), {r.h_n, r.c_n}};
          }) {}

  NamedShared params() const {
    NamedShared all = lstm_.named_parameters();
    for (const auto& p : head_.named_parameters()) all.push_back(p);
    return all;
  }
  // One chunk of a stream made from the noise generator (its state is checkpointed too).
  void step() {
    const Tensor xs = normal({K, B, I}, 0.0, 1.0, noise_);
    const Tensor ys = normal({K, B, I}, 0.0, 1.0, noise_);
    tbptt_.feed(xs, ys, [&](const nn::WindowReport&) {
      optim::clip_grad_norm(params(), 1.0);
      adam_.step();
      adam_.zero_grad();
    });
    ++steps_;
  }
  TrainingState state() {
    carry_h_.assign(tbptt_.carried_state()[0]);
    carry_c_.assign(tbptt_.carried_state()[1]);
    return {.parameters = params(), .optimizer_state = adam_.named_state(),
            .extra = {{"h", carry_h_}, {"c", carry_c_}}, .generators = {{"noise", &noise_}}, .step = steps_};
  }
  void restore(const std::filesystem::path& path) {
    TrainingState s = state();
    load_checkpoint(path, s);
    steps_ = s.step;
    tbptt_.reset({carry_h_.value(), carry_c_.value()});
  }

 private:
  Generator gen_, noise_;
  nn::LSTM lstm_;
  nn::Linear head_;
  optim::Adam adam_;
  nn::TruncatedBptt tbptt_;
  Shared carry_h_{zeros({1, B, H}), "h"}, carry_c_{zeros({1, B, H}), "c"};
  std::int64_t steps_ = 0;
};

bool bitwise_equal(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::equal(a.data<float>(), a.data<float>() + a.numel(), b.data<float>());
}

TEST(TrainingResume, StoppedAndResumedRunIsBitIdentical) {
  const auto path = std::filesystem::temp_directory_path() / ("recur_resume_" + std::to_string(getpid()) + ".npz");
  TrainingRun straight;
  for (int i = 0; i < 8; ++i) straight.step();

  {
    TrainingRun first_half;
    for (int i = 0; i < 4; ++i) first_half.step();
    save_checkpoint(path, first_half.state());
  }  // the process "stops": nothing of the first half survives but the file
  TrainingRun resumed;
  resumed.restore(path);
  EXPECT_EQ(resumed.state().step, 4);
  for (int i = 0; i < 4; ++i) resumed.step();
  std::filesystem::remove(path);

  const NamedShared a = straight.params(), b = resumed.params();
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) EXPECT_TRUE(bitwise_equal(a[i].second.value(), b[i].second.value())) << a[i].first;
  const TrainingState sa = straight.state(), sb = resumed.state();
  for (std::size_t i = 0; i < sa.optimizer_state.size(); ++i)
    EXPECT_TRUE(allclose(sa.optimizer_state[i].second.value().to(DType::float64),
                         sb.optimizer_state[i].second.value().to(DType::float64), 0.0, 0.0))
        << sa.optimizer_state[i].first;
  // A run that is not resumed (fresh parameters, 4 steps) differs: the comparison can fail.
  TrainingRun fresh;
  for (int i = 0; i < 4; ++i) fresh.step();
  EXPECT_FALSE(bitwise_equal(fresh.params()[0].second.value(), a[0].second.value()));
}

}  // namespace
}  // namespace recur
