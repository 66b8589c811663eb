// Resuming a data-parallel checkpoint on another number of ranks (StreamState): a job
// stopped after a few steps on 2 ranks goes on on 1, and one stopped on 1 goes on on 2, to
// the parameters of an uninterrupted run of the same global batch (float64, 1e-12
// relative), for an LSTM over 4 streams with truncated BPTT (carried state and one noise
// generator per stream) and for an MLP fed by DistributedSampler (stopped mid-epoch). A
// checkpoint whose streams or sampler position the new ranks cannot split is a ResizeError
// naming both numbers of ranks, on every rank, with nothing changed.
//
// Where it is inexact: a step on p ranks computes each rank's gradient as the mean over its
// own streams (or examples), and the all-reduce adds the p means (then divides by p), while
// one process sums over all of them in one backward. The same numbers are added in another
// order (the batch reduction inside the weight-gradient products is split at the rank
// boundary and its parts added last, by the all-reduce; beyond 2 ranks MPI's reduction
// order is one more association), so runs on 2 ranks and on 1 differ by rounding. Resuming
// mixes the two (steps before the stop on N ranks, after it on M), so it lies within that
// rounding of both uninterrupted runs: checked against both. Measured here: at most 2.5e-16
// relative in the parameters and 5.3e-16 in the carried state, far inside 1e-12. What is
// exact: the step count, the sampler's epoch and position and every stream's random state
// (the same draws wherever a stream runs), checked bit for bit.
//
// Resize.*: both sizes inside one 2-rank job (each rank alone on its own communicator is a
// 1-rank job). ResizeAcrossJobs.*: two mpiexec runs chained by ctest fixtures, writing
// and reading RECUR_RESIZE_DIR (skipped without it).
#include <gtest/gtest.h>

#include <cstdlib>
#include <deque>
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

constexpr std::int64_t kK1 = 3, kWindows = 10, kStreams = 4;                      // the LSTM
constexpr std::int64_t kExamples = 50, kGlobalBatch = 4, kSteps = 20;               // the MLP
constexpr std::int64_t kLstmStop = 4, kMlpStop = 15;  // mid-epoch: 12 batches of 4 in 50

// What both trainers share: the communicator (nullptr: one process, no communication),
// Adam, the gradient reducer, the step count, checkpoints with a StreamState.
class Optimizing {
 public:
  Optimizing(const Communicator* comm, const Module& model) : comm_(comm), model_(model) {
    if (comm) {
      broadcast_parameters(*comm, model);
      reducer_ = std::make_unique<GradientReducer>(*comm, model.parameters(), ReducerOptions{.bucket_bytes = 256});
    }
    adam_.emplace(model.named_parameters(), optim::AdamOptions{.lr = 0.01});
  }
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int world() const { return comm_ ? comm_->size() : 1; }

  // After a backward: gradients averaged over the ranks, clipped, one Adam step.
  void step() {
    if (reducer_) reducer_->finish();
    optim::clip_grad_norm(model_.parameters(), 0.5);
    adam_->step();
    adam_->zero_grad();
    ++steps;
  }
  void save(const std::filesystem::path& path, const StreamState& streams) const {
    save_checkpoint(*comm_, path, state(), streams);
  }
  void load(const std::filesystem::path& path, StreamState streams) {
    TrainingState s = state();
    load_checkpoint(*comm_, path, s, streams);
    steps = s.step;
  }

  std::int64_t steps = 0;

 private:
  TrainingState state() const {
    return {.parameters = model_.named_parameters(), .optimizer_state = adam_->named_state(), .step = steps};
  }
  const Communicator* comm_;
  const Module& model_;
  std::optional<optim::Adam> adam_;
  std::unique_ptr<GradientReducer> reducer_;
};

// The LSTM over this rank's block of kStreams streams, each stream's inputs perturbed by
// noise from that stream's own generator, the state carried from window to window.
class StreamTrainer {
 public:
  StreamTrainer(const Communicator* comm, std::uint64_t init_seed) : model_(init_seed), run_(comm, model_) {
    range_ = shard_range(kStreams, run_.rank(), run_.world());
    Generator gen(100);
    inputs_ = shard_streams(normal({kWindows * kK1, kStreams, kInput}, 0, 1, gen, f64), 1, run_.rank(), run_.world());
    targets_ = shard_streams(normal({kWindows * kK1, kStreams, kOutput}, 0, 1, gen, f64), 1, run_.rank(), run_.world());
    for (std::int64_t s = range_.begin; s < range_.end; ++s) noise_.emplace_back(1000 + static_cast<std::uint64_t>(s));
    const std::int64_t mine = range_.end - range_.begin;
    carried_h_ = Shared(zeros({1, mine, kHidden}, f64), "h");
    carried_c_ = Shared(zeros({1, mine, kHidden}, f64), "c");
  }

  StreamState streams() {
    StreamGenerators noise{.name = "noise", .per_stream = {}};
    for (Generator& g : noise_) noise.per_stream.push_back(&g);
    return {.streams = kStreams,
            .variables = {{.name = "carry.h", .value = carried_h_, .axis = 1}, {.name = "carry.c", .value = carried_c_, .axis = 1}},
            .generators = {noise}};
  }
  void save(const std::filesystem::path& path) { run_.save(path, streams()); }
  void load(const std::filesystem::path& path) { run_.load(path, streams()); }

  // Trains windows [steps, until).
  void train(std::int64_t until) {
    nn::TruncatedBptt tbptt({.k1 = kK1}, {carried_h_.value(), carried_c_.value()},
                            [&](std::span<const Var> s, const Tensor& x, const Tensor& y, std::int64_t from) {
                              return model_(s, x, y, from);
                            });
    for (; run_.steps < until;) {
      const std::int64_t w = run_.steps;
      std::vector<Tensor> noise;
      for (Generator& g : noise_) noise.push_back(normal({kK1, 1, kInput}, 0, 0.1, g, f64));
      const Tensor x = slice(inputs_, 0, w * kK1, (w + 1) * kK1) + concat(noise, 1);
      tbptt.feed(x, slice(targets_, 0, w * kK1, (w + 1) * kK1), [&](const nn::WindowReport&) { run_.step(); });
      carried_h_.assign(tbptt.carried_state()[0]);
      carried_c_.assign(tbptt.carried_state()[1]);
    }
  }

  std::int64_t steps() const { return run_.steps; }
  std::vector<Tensor> parameters() const { return values_of(model_); }
  // Streams [range.begin, range.end)'s carried h and c, and stream s's generator state.
  Range range() const { return range_; }
  std::vector<Tensor> carried(Range r) const {
    return {slice(carried_h_.value(), 1, r.begin - range_.begin, r.end - range_.begin),
            slice(carried_c_.value(), 1, r.begin - range_.begin, r.end - range_.begin)};
  }
  Tensor noise_state(std::int64_t s) const { return noise_[static_cast<std::size_t>(s - range_.begin)].state(); }

 private:
  LstmRegression model_;
  Optimizing run_;
  Range range_;
  Tensor inputs_, targets_;
  std::deque<Generator> noise_;
  Shared carried_h_, carried_c_;
};

// The MLP over batches of kGlobalBatch examples (kGlobalBatch / p per rank) from a
// DistributedSampler; an epoch ends when a whole global batch no longer fits in the dataset
// (so that where it ends does not depend on the sampler's padding, which does).
class SampleTrainer {
 public:
  SampleTrainer(const Communicator* comm, std::uint64_t init_seed)
      : model_(init_seed), run_(comm, model_), sampler_(kExamples, run_.rank(), run_.world(), {.seed = 5}) {
    Generator gen(200);
    x_ = normal({kExamples, kInput}, 0, 1, gen, f64);
    y_ = normal({kExamples, kOutput}, 0, 1, gen, f64);
  }

  void save(const std::filesystem::path& path) { run_.save(path, {.sampler = &sampler_}); }
  void load(const std::filesystem::path& path) { run_.load(path, {.sampler = &sampler_}); }

  void train(std::int64_t until) {
    const std::int64_t batch = kGlobalBatch / run_.world();
    for (; run_.steps < until;) {
      if (sampler_.position() + kGlobalBatch > kExamples) sampler_.set_epoch(sampler_.epoch() + 1);
      const std::vector<std::int64_t> order = sampler_.indices();
      Tensor rows = Tensor::empty({batch}, DType::int64);
      std::copy_n(order.begin(), batch, rows.data<std::int64_t>());
      Tape tape;
      tape.backward(mse(model_(Var(take(x_, rows))), Var(take(y_, rows))));
      run_.step();
      sampler_.set_position(sampler_.position() + kGlobalBatch);
    }
  }

  std::int64_t steps() const { return run_.steps; }
  std::vector<Tensor> parameters() const { return values_of(model_); }
  const DistributedSampler& sampler() const { return sampler_; }

 private:
  Mlp model_;
  Optimizing run_;
  DistributedSampler sampler_;
  Tensor x_, y_;
};

// `resumed` went on where `reference` never stopped: the same parameters to rounding, and
// for its streams the same carried state and, bit for bit, the same random states.
void expect_continues(const StreamTrainer& resumed, const StreamTrainer& reference, const char* what) {
  EXPECT_EQ(resumed.steps(), reference.steps());
  const double parameters = worst_relative_difference(resumed.parameters(), reference.parameters());
  const double carried = worst_relative_difference(resumed.carried(resumed.range()), reference.carried(resumed.range()));
  EXPECT_LE(parameters, 1e-12) << what;
  EXPECT_LE(carried, 1e-12) << what;
  for (std::int64_t s = resumed.range().begin; s < resumed.range().end; ++s)
    expect_bitwise_equal({resumed.noise_state(s)}, {reference.noise_state(s)});
  std::printf("rank %d: LSTM %s: worst relative difference %.3g (parameters), %.3g (carried state)\n", world().rank(),
              what, parameters, carried);
}

void expect_continues(const SampleTrainer& resumed, const SampleTrainer& reference, const char* what) {
  EXPECT_EQ(resumed.steps(), reference.steps());
  EXPECT_EQ(resumed.sampler().epoch(), reference.sampler().epoch());
  EXPECT_EQ(resumed.sampler().position(), reference.sampler().position());
  const double parameters = worst_relative_difference(resumed.parameters(), reference.parameters());
  EXPECT_LE(parameters, 1e-12) << what;
  std::printf("rank %d: MLP %s: worst relative difference %.3g\n", world().rank(), what, parameters);
}

// Runs f(solo) with a communicator of this rank alone: a 1-rank job.
template <class F>
void alone(F&& f) {
  MPI_Comm comm;
  MPI_Comm_split(world().handle(), world().rank(), 0, &comm);
  {
    const Communicator solo(comm);
    f(solo);
  }
  MPI_Comm_free(&comm);
}

// `Trainer` trained for `stop` steps on `comm` and saved.
template <class Trainer>
void stop_and_save(const Communicator& comm, std::int64_t stop, std::uint64_t seed, const std::filesystem::path& path) {
  Trainer first(&comm, seed);
  first.train(stop);
  first.save(path);
}

// Resumes `Trainer` from `path` on `comm` (fresh objects, other initial values), trains it
// to `end` and checks it against the uninterrupted runs on one process and on `comm`.
template <class Trainer>
void resume_and_compare(const Communicator& comm, std::int64_t stop, std::int64_t end, std::uint64_t seed,
                        const std::filesystem::path& path) {
  Trainer resumed(&comm, seed + 90);
  resumed.load(path);
  EXPECT_EQ(resumed.steps(), stop);
  resumed.train(end);
  Trainer single(nullptr, seed), uninterrupted(&comm, seed);
  single.train(end);
  uninterrupted.train(end);
  expect_continues(resumed, single, "resumed vs one process");
  expect_continues(resumed, uninterrupted, "resumed vs uninterrupted on the new ranks");
  // The training moved the parameters (the comparison is not of two initial states).
  EXPECT_GT(worst_relative_difference(single.parameters(), Trainer(nullptr, seed).parameters()), 1e-3);
}

// Both trainers stopped on `comm` and saved to `lstm` and `mlp`.
void stop_both(const Communicator& comm, const std::filesystem::path& lstm, const std::filesystem::path& mlp) {
  stop_and_save<StreamTrainer>(comm, kLstmStop, 7, lstm);
  stop_and_save<SampleTrainer>(comm, kMlpStop, 11, mlp);
}
void resume_both(const Communicator& comm, const std::filesystem::path& lstm, const std::filesystem::path& mlp) {
  resume_and_compare<StreamTrainer>(comm, kLstmStop, kWindows, 7, lstm);
  resume_and_compare<SampleTrainer>(comm, kMlpStop, kSteps, 11, mlp);
}

TEST(Resize, TwoRanksStopOneGoesOn) {
  const Communicator& comm = world();
  if (comm.size() != 2) GTEST_SKIP() << "needs two ranks";
  const std::filesystem::path lstm = shared_path("two_to_one_lstm.npz"), mlp = shared_path("two_to_one_mlp.npz");
  stop_both(comm, lstm, mlp);
  // Each rank resumes the whole job alone (the two do the same, side by side).
  alone([&](const Communicator& solo) { resume_both(solo, lstm, mlp); });
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove(lstm), std::filesystem::remove(mlp);
}

TEST(Resize, OneRankStopsTwoGoOn) {
  const Communicator& comm = world();
  if (comm.size() != 2) GTEST_SKIP() << "needs two ranks";
  const std::filesystem::path lstm = shared_path("one_to_two_lstm.npz"), mlp = shared_path("one_to_two_mlp.npz");
  alone([&](const Communicator& solo) {
    if (comm.is_root()) stop_both(solo, lstm, mlp);
  });
  comm.barrier();
  resume_both(comm, lstm, mlp);
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove(lstm), std::filesystem::remove(mlp);
}

// What a load that fails must leave as it was.
struct Untouched {
  Shared w{ones({2}, f64), "w"};
  Shared carry;
  Generator noise{3}, other{4};
  DistributedSampler sampler;
  TrainingState state{.parameters = {{"w", w}}, .step = 5};
  explicit Untouched(const Communicator& comm)
      : carry(full({2}, comm.rank(), f64), "carry"), sampler(8, comm, {.seed = 1}) {
    sampler.set_epoch(2);
  }
  StreamState streams(std::int64_t count) {
    return {.streams = count, .variables = {{.name = "carry", .value = carry, .axis = 0}}, .generators = {{"noise", {&noise, &other}}}};
  }
  void expect_unchanged(const Communicator& comm) const {
    EXPECT_EQ(w.value().data<double>()[0], 1.0);
    EXPECT_EQ(w.version(), 0u);
    EXPECT_EQ(carry.value().data<double>()[0], comm.rank());
    EXPECT_EQ(carry.version(), 0u);
    expect_bitwise_equal({noise.state()}, {Generator(3).state()});
    EXPECT_EQ(state.step, 5);
    EXPECT_EQ(sampler.epoch(), 2);
    EXPECT_EQ(sampler.position(), 0);
  }
};

// The message of the E that bad() throws (an empty string, and a test failure, otherwise).
template <class E, class F>
std::string thrown(F&& bad) {
  try {
    bad();
  } catch (const E& e) {
    return e.what();
  }
  ADD_FAILURE() << "no exception";
  return "";
}

TEST(Resize, StreamsThatDoNotSplitAreAResizeErrorOnEveryRankNamingBothSizes) {
  const Communicator& comm = world();
  if (comm.size() != 2) GTEST_SKIP() << "needs two ranks";
  const std::filesystem::path three = shared_path("three_streams.npz"), odd = shared_path("odd_position.npz");
  alone([&](const Communicator& solo) {
    if (!comm.is_root()) return;
    Shared w(ones({2}, f64), "w"), carry(zeros({3}, f64), "carry");
    Generator a(1), b(2), c(3);
    save_checkpoint(solo, three, {.parameters = {{"w", w}}},
                    {.streams = 3, .variables = {{.name = "carry", .value = carry, .axis = 0}}, .generators = {{"noise", {&a, &b, &c}}}});
    DistributedSampler sampler(8, solo, {.seed = 1});
    sampler.set_position(3);  // three examples of the epoch taken: not two ranks' even share
    save_checkpoint(solo, odd, {.parameters = {{"w", w}}}, {.sampler = &sampler});
  });
  comm.barrier();

  Untouched mine(comm);
  StreamState streams = mine.streams(4);  // what this job has: 2 streams on each rank
  const std::string message = thrown<ResizeError>([&] { load_checkpoint(comm, three, mine.state, streams); });
  for (const char* part : {"recur::distributed::load_checkpoint", "written by 1 rank and this job has 2 ranks",
                           "3 streams cannot be split evenly between 2 ranks"})
    EXPECT_NE(message.find(part), std::string::npos) << message;
  mine.expect_unchanged(comm);

  StreamState sampled{.sampler = &mine.sampler};
  const std::string position = thrown<ResizeError>([&] { load_checkpoint(comm, odd, mine.state, sampled); });
  for (const char* part : {"written by 1 rank and this job has 2 ranks", "sampler is at example 3"})
    EXPECT_NE(position.find(part), std::string::npos) << position;
  mine.expect_unchanged(comm);
  // A ValueError to code that catches those; asked without MPI, the same answer.
  EXPECT_THROW(load_checkpoint(comm, three, mine.state, streams), ValueError);
  EXPECT_THROW(check_resume(three, 2), ResizeError);
  EXPECT_NO_THROW(check_resume(three, 3));
  EXPECT_THROW(check_resume(odd, 2), ResizeError);
  EXPECT_NO_THROW(check_resume(odd, 3));

  // The two forms do not read each other's files.
  const std::string per_rank = thrown<ValueError>([&] { load_checkpoint(comm, three, mine.state); });
  EXPECT_NE(per_rank.find("load it with a StreamState"), std::string::npos) << per_rank;
  const std::filesystem::path ranks = shared_path("per_rank.npz");
  save_checkpoint(comm, ranks, mine.state);
  const std::string per_stream = thrown<ValueError>([&] { load_checkpoint(comm, ranks, mine.state, streams); });
  EXPECT_NE(per_stream.find("load it without a StreamState, on 2 ranks"), std::string::npos) << per_stream;
  mine.expect_unchanged(comm);
  comm.barrier();
  if (comm.is_root()) std::filesystem::remove(three), std::filesystem::remove(odd), std::filesystem::remove(ranks);
}

// ---- Across jobs: `mpiexec -n N ... ResizeAcrossJobs.Save`, then `-n M ... Resume`.

std::optional<std::filesystem::path> resize_dir() {
  const char* dir = std::getenv("RECUR_RESIZE_DIR");
  if (!dir) return std::nullopt;
  return std::filesystem::path(dir);
}

TEST(ResizeAcrossJobs, Save) {
  const auto dir = resize_dir();
  if (!dir) GTEST_SKIP() << "RECUR_RESIZE_DIR is not set";
  const Communicator& comm = world();
  if (comm.is_root()) std::filesystem::create_directories(*dir);
  comm.barrier();
  stop_both(comm, *dir / "lstm.npz", *dir / "mlp.npz");
}

TEST(ResizeAcrossJobs, Resume) {
  const auto dir = resize_dir();
  if (!dir) GTEST_SKIP() << "RECUR_RESIZE_DIR is not set";
  const Communicator& comm = world();
  for (const char* file : {"lstm.npz", "mlp.npz"}) {
    const std::int64_t written_by = load_npz_map(*dir / file).at("extra/distributed.world_size").item<std::int64_t>();
    EXPECT_NE(written_by, comm.size()) << "the test is of resuming on another number of ranks";
  }
  resume_both(comm, *dir / "lstm.npz", *dir / "mlp.npz");
}

}  // namespace
}  // namespace recur::distributed::testing
