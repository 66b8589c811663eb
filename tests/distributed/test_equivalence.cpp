// Data-parallel training equals one process: after 20 Adam steps (with gradient clipping
// after the all-reduce), p ranks with batch B each hold the parameters one process gets
// with batch p*B, to 1e-12 relative, for an LSTM trained with truncated BPTT over sharded
// streams and for an MLP fed by DistributedSampler. The ranks start from different
// initial values, so this also checks that broadcast_parameters aligns them.
#include <gtest/gtest.h>

#include <memory>

#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/gradient_reducer.hpp>
#include <recur/distributed/sharding.hpp>

#include "models.hpp"
#include "world.hpp"

namespace recur::distributed::testing {
namespace {

constexpr std::int64_t kSteps = 20, kK1 = 4, kStreamsPerRank = 2, kBatchPerRank = 4;

struct TrainingRun {
  std::vector<Tensor> parameters;
  std::size_t overlapped = 0;  // buckets started during backward, over the run
};

// comm == nullptr: one process over all streams.
TrainingRun train_lstm(const Tensor& inputs, const Tensor& targets, const Communicator* comm, ReducerOptions reducer_options = {}) {
  LstmRegression model(comm ? 7 + static_cast<std::uint64_t>(comm->rank()) : 7);
  std::unique_ptr<GradientReducer> reducer;
  Tensor my_inputs = inputs, my_targets = targets;
  if (comm) {
    broadcast_parameters(*comm, model);
    reducer = std::make_unique<GradientReducer>(*comm, model.parameters(), reducer_options);
    my_inputs = shard_streams(inputs, 1, *comm);
    my_targets = shard_streams(targets, 1, *comm);
  }
  optim::Adam adam(model.named_parameters(), {.lr = 0.01});
  const std::int64_t streams = my_inputs.shape()[1];
  nn::TruncatedBptt tbptt({.k1 = kK1}, {zeros({1, streams, kHidden}, f64), zeros({1, streams, kHidden}, f64)},
                          [&](std::span<const Var> state, const Tensor& x, const Tensor& y, std::int64_t from) {
                            return model(state, x, y, from);
                          });
  TrainingRun run;
  int windows = 0;
  tbptt.feed(my_inputs, my_targets, [&](const nn::WindowReport&) {
    if (reducer) {
      reducer->finish();
      run.overlapped += reducer->stats().started_during_backward;
    }
    optim::clip_grad_norm(model.parameters(), 0.5);
    adam.step();
    adam.zero_grad();
    ++windows;
  });
  EXPECT_EQ(windows, kSteps);
  run.parameters = values_of(model);
  return run;
}

struct StreamData {
  Tensor inputs, targets;
};
StreamData stream_data(int world) {
  Generator gen(100);
  const std::int64_t streams = kStreamsPerRank * world;
  return {normal({kSteps * kK1, streams, kInput}, 0, 1, gen, f64), normal({kSteps * kK1, streams, kOutput}, 0, 1, gen, f64)};
}

TEST(DataParallel, LstmTbpttOverShardedStreamsEqualsOneProcessWithAllStreams) {
  const Communicator& comm = world();
  const StreamData data = stream_data(comm.size());
  const TrainingRun distributed = train_lstm(data.inputs, data.targets, &comm, {.bucket_bytes = 512});
  const TrainingRun single = train_lstm(data.inputs, data.targets, nullptr);
  const double difference = worst_relative_difference(distributed.parameters, single.parameters);
  EXPECT_LE(difference, 1e-12);
  std::printf("rank %d: LSTM, %d ranks x %lld streams vs 1 x %lld: worst relative difference %.3g\n", comm.rank(),
              comm.size(), static_cast<long long>(kStreamsPerRank), static_cast<long long>(kStreamsPerRank * comm.size()),
              difference);
  // The training moved the parameters (the comparison is not of two initial states).
  EXPECT_GT(worst_relative_difference(single.parameters, values_of(LstmRegression(7))), 1e-3);
  // Small buckets: some all-reduces started while backward was still running.
  EXPECT_GT(distributed.overlapped, 0u);
}

TEST(DataParallel, SameResultEveryRunWithoutOverlapAndWithACommunicationThread) {
  const Communicator& comm = world();
  const StreamData data = stream_data(comm.size());
  const TrainingRun first = train_lstm(data.inputs, data.targets, &comm, {.bucket_bytes = 512});
  const TrainingRun again = train_lstm(data.inputs, data.targets, &comm, {.bucket_bytes = 512});
  const TrainingRun after = train_lstm(data.inputs, data.targets, &comm, {.bucket_bytes = 512, .overlap = false});
  const TrainingRun threaded =
      train_lstm(data.inputs, data.targets, &comm, {.bucket_bytes = 512, .progress = Progress::thread});
  expect_bitwise_equal(first.parameters, again.parameters);
  expect_bitwise_equal(first.parameters, after.parameters);
  expect_bitwise_equal(first.parameters, threaded.parameters);
  EXPECT_EQ(after.overlapped, 0u);
  EXPECT_GT(threaded.overlapped, 0u);  // handed to the thread during backward
}

// comm == nullptr: one process with batch kBatchPerRank * world.
std::vector<Tensor> train_mlp(const Tensor& x, const Tensor& y, const Communicator* comm, int world_size) {
  Mlp model(comm ? 11 + static_cast<std::uint64_t>(comm->rank()) : 11);
  std::unique_ptr<GradientReducer> reducer;
  if (comm) {
    broadcast_parameters(*comm, model);
    reducer = std::make_unique<GradientReducer>(*comm, model.parameters());
  }
  optim::Adam adam(model.named_parameters(), {.lr = 0.01});
  const int rank = comm ? comm->rank() : 0, world_ranks = comm ? comm->size() : 1;
  const std::int64_t batch = comm ? kBatchPerRank : kBatchPerRank * world_size;
  DistributedSampler sampler(x.shape()[0], rank, world_ranks, {.seed = 5});
  int steps = 0;
  for (std::int64_t epoch = 0; steps < kSteps; ++epoch) {
    sampler.set_epoch(epoch);
    const std::vector<std::int64_t> order = sampler.indices();
    for (std::size_t at = 0; at + static_cast<std::size_t>(batch) <= order.size() && steps < kSteps;
         at += static_cast<std::size_t>(batch), ++steps) {
      Tensor rows = Tensor::empty({batch}, DType::int64);
      std::copy_n(order.begin() + static_cast<std::ptrdiff_t>(at), batch, rows.data<std::int64_t>());
      Tape tape;
      tape.backward(mse(model(Var(take(x, rows))), Var(take(y, rows))));
      if (reducer) reducer->finish();
      optim::clip_grad_norm(model.parameters(), 0.5);
      adam.step();
      adam.zero_grad();
    }
  }
  return values_of(model);
}

TEST(DataParallel, MlpWithDistributedSamplerEqualsOneProcessWithTheWholeBatch) {
  const Communicator& comm = world();
  Generator gen(200);
  const Tensor x = normal({51, kInput}, 0, 1, gen, f64), y = normal({51, kOutput}, 0, 1, gen, f64);
  const std::vector<Tensor> distributed = train_mlp(x, y, &comm, comm.size());
  const std::vector<Tensor> single = train_mlp(x, y, nullptr, comm.size());
  const double difference = worst_relative_difference(distributed, single);
  EXPECT_LE(difference, 1e-12);
  std::printf("rank %d: MLP, %d ranks x batch %lld vs 1 x batch %lld: worst relative difference %.3g\n", comm.rank(),
              comm.size(), static_cast<long long>(kBatchPerRank), static_cast<long long>(kBatchPerRank * comm.size()),
              difference);
  EXPECT_GT(worst_relative_difference(single, values_of(Mlp(11))), 1e-3);
}

}  // namespace
}  // namespace recur::distributed::testing
