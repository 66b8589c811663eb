// Distributed checkpoints: a run stopped after 4 windows, saved by rank 0, loaded into
// fresh objects and continued equals the uninterrupted run bit for bit (parameters, Adam's
// state, every rank's carried LSTM state and its random stream); a checkpoint of another
// world size is a clear ResizeError on every rank.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <optional>

#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/checkpoint.hpp>
#include <recur/distributed/gradient_reducer.hpp>
#include <recur/distributed/sharding.hpp>

#include "models.hpp"
#include "world.hpp"

namespace recur::distributed::testing {
namespace {

constexpr std::int64_t kK1 = 3, kWindows = 10, kStreamsPerRank = 2;

// One rank's training: the LSTM over its streams, inputs perturbed by noise from its own
// generator (so the random state matters), state carried between windows.
class Trainer {
 public:
  Trainer(const Communicator& comm, std::uint64_t init_seed)
      : comm_(comm), model_(init_seed), noise_(1000 + static_cast<std::uint64_t>(comm.rank())) {
    Generator gen(100);
    const std::int64_t streams = kStreamsPerRank * comm.size();
    inputs_ = shard_streams(normal({kWindows * kK1, streams, kInput}, 0, 1, gen, f64), 1, comm);
    targets_ = shard_streams(normal({kWindows * kK1, streams, kOutput}, 0, 1, gen, f64), 1, comm);
    broadcast_parameters(comm, model_);
    adam_.emplace(model_.named_parameters(), optim::AdamOptions{.lr = 0.01});
    reducer_ = std::make_unique<GradientReducer>(comm, model_.parameters(), ReducerOptions{.bucket_bytes = 256});
    carried_h_ = Shared(zeros({1, kStreamsPerRank, kHidden}, f64), "h");
    carried_c_ = Shared(zeros({1, kStreamsPerRank, kHidden}, f64), "c");
  }

  TrainingState state() {
    return {.parameters = model_.named_parameters(),
            .optimizer_state = adam_->named_state(),
            .extra = {{"carry.h", carried_h_}, {"carry.c", carried_c_}},
            .generators = {{"noise", &noise_}},
            .step = windows_};
  }
  void restored(std::int64_t windows) { windows_ = windows; }

  // Trains windows [windows_, until).
  void train(std::int64_t until) {
    nn::TruncatedBptt tbptt({.k1 = kK1}, {carried_h_.value(), carried_c_.value()},
                            [&](std::span<const Var> s, const Tensor& x, const Tensor& y, std::int64_t from) {
                              return model_(s, x, y, from);
                            });
    for (; windows_ < until; ++windows_) {
      const Tensor x = slice(inputs_, 0, windows_ * kK1, (windows_ + 1) * kK1);
      const Tensor noisy = x + normal(x.shape(), 0, 0.1, noise_, f64);
      tbptt.feed(noisy, slice(targets_, 0, windows_ * kK1, (windows_ + 1) * kK1), [&](const nn::WindowReport&) {
        reducer_->finish();
        optim::clip_grad_norm(model_.parameters(), 0.5);
        adam_->step();
        adam_->zero_grad();
      });
      carried_h_.assign(tbptt.carried_state()[0]);
      carried_c_.assign(tbptt.carried_state()[1]);
    }
  }

  std::vector<Tensor> everything() const {
    std::vector<Tensor> all = values_of(model_);
    for (const auto& [name, s] : adam_->named_state()) all.push_back(s.value().clone());
    all.push_back(carried_h_.value().clone());
    all.push_back(carried_c_.value().clone());
    all.push_back(noise_.state());
    return all;
  }

 private:
  const Communicator& comm_;
  LstmRegression model_;
  Generator noise_;
  Tensor inputs_, targets_;
  std::optional<optim::Adam> adam_;
  std::unique_ptr<GradientReducer> reducer_;
  Shared carried_h_, carried_c_;
  std::int64_t windows_ = 0;
};

TEST(DistributedCheckpoint, ResumedRunEqualsTheUninterruptedOneBitForBit) {
  const Communicator& comm = world();
  const std::filesystem::path path = shared_path("resume.npz");
  Trainer uninterrupted(comm, 7);
  uninterrupted.train(kWindows);

  Trainer first(comm, 7);
  first.train(4);
  save_checkpoint(comm, path, first.state());
  EXPECT_EQ(std::filesystem::exists(path), true);

  Trainer resumed(comm, 99);  // other initial values: everything must come from the file
  TrainingState state = resumed.state();
  load_checkpoint(comm, path, state);
  EXPECT_EQ(state.step, 4);
  resumed.restored(state.step);
  resumed.train(kWindows);
  expect_bitwise_equal(resumed.everything(), uninterrupted.everything());
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove(path);
}

TEST(DistributedCheckpoint, AnotherWorldSizeIsAClearErrorOnEveryRank) {
  const Communicator& comm = world();
  if (comm.size() < 2) GTEST_SKIP() << "needs two ranks";
  const std::filesystem::path path = shared_path("solo.npz");
  Shared w(ones({2}, f64), "w"), carry(full({2}, comm.rank(), f64), "carry");
  MPI_Comm alone;
  MPI_Comm_split(comm.handle(), comm.rank(), 0, &alone);
  {
    const Communicator solo(alone);
    if (comm.is_root()) save_checkpoint(solo, path, {.parameters = {{"w", w}}, .extra = {{"carry", carry}}});
  }
  MPI_Comm_free(&alone);
  comm.barrier();
  TrainingState state{.parameters = {{"w", w}}, .extra = {{"carry", carry}}};
  try {
    load_checkpoint(comm, path, state);
    ADD_FAILURE() << "no error";
  } catch (const ResizeError& e) {
    EXPECT_NE(std::string(e.what()).find("was written by 1 ranks but this job has " + std::to_string(comm.size())),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(carry.value().data<double>()[0], comm.rank());  // unchanged
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove(path);
}

TEST(DistributedCheckpoint, AMissingFileIsAnIOErrorOnEveryRank) {
  const Communicator& comm = world();
  Shared w(ones({2}, f64), "w");
  TrainingState state{.parameters = {{"w", w}}};
  EXPECT_THROW(load_checkpoint(comm, shared_path("missing.npz"), state), IOError);
}

}  // namespace
}  // namespace recur::distributed::testing
