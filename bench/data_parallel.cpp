// Data-parallel training throughput: one training step (forward, backward, gradient
// all-reduce, Adam) of the char-LSTM and of the RNN suite's LSTM M, timed on each rank.
// Compare, with the same global batch:
//   OPENBLAS_NUM_THREADS=1 mpirun -np 2 recur_bench_data_parallel --model lstm_m --threads 1
//   recur_bench_data_parallel --model lstm_m --threads 2
// (scripts/bench_data_parallel.sh runs both for both models and prints the ratio). Prints
// one line per run: samples per second of the whole job, the all-reduce's share of a step
// (the time finish() waited: communication not hidden behind backward) and bytes
// all-reduced per rank per step. Run under mpirun it trains on batch / ranks per rank.
#include <recur/recur.hpp>
#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/gradient_reducer.hpp>

#include <CLI/CLI.hpp>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

namespace {

using namespace recur;

struct Model {
  const char* name;
  std::int64_t vocabulary;  // 0: dense inputs of `input` features (LSTM M); else codes (char-LSTM)
  std::int64_t input, hidden, batch, steps;
};
// LSTM M: bench/rnn_suite.hpp's shapes; char-LSTM: examples/char_lstm.cpp's defaults.
constexpr Model kModels[] = {{"lstm_m", 0, 64, 256, 32, 100}, {"char_lstm", 96, 32, 256, 32, 64}};

// Embedding (char-LSTM) or nothing, an LSTM, a Linear head; one full-BPTT window per step.
class Network : public Module {
 public:
  Network(const Model& m, Generator& gen)
      : embed_(m.vocabulary ? m.vocabulary : 1, m.input, gen),
        lstm_({.input_size = m.input, .hidden_size = m.hidden}, gen),
        head_(m.hidden, m.vocabulary ? m.vocabulary : m.input, gen),
        codes_(m.vocabulary > 0) {
    if (codes_) register_module("embed", embed_);
    register_module("lstm", lstm_);
    register_module("head", head_);
  }
  Var loss(const Tensor& inputs, const Tensor& targets) const {
    const Var x = codes_ ? embed_(inputs) : Var(inputs);
    const Var y = head_(lstm_(x).output);
    if (!codes_) return mse(y, Var(targets));
    const std::int64_t rows = y.shape()[0] * y.shape()[1];
    return cross_entropy(reshape(y, {rows, y.shape()[2]}), reshape(targets, {rows}));
  }

 private:
  nn::Embedding embed_;
  nn::LSTM lstm_;
  nn::Linear head_;
  bool codes_;
};

// Character codes in [0, vocabulary), as random text.
Tensor random_codes(const Shape& shape, std::int64_t vocabulary, Generator& gen) {
  Tensor codes = Tensor::empty(shape, DType::int64);
  for (std::int64_t i = 0; i < codes.numel(); ++i)
    codes.data<std::int64_t>()[i] = static_cast<std::int64_t>(gen.next_u64() % static_cast<std::uint64_t>(vocabulary));
  return codes;
}

struct Options {
  std::string model = "lstm_m";
  int threads = 1;
  long steps = 30, warmup = 5;
  std::size_t bucket_bytes = std::size_t{1} << 20;
  bool no_overlap = false;
  bool thread = false;
  bool barrier_before_finish = false;
};

int run(const Options& o) {
  const Model* model = nullptr;
  for (const Model& m : kModels)
    if (o.model == m.name) model = &m;
  if (!model) throw std::invalid_argument("unknown --model " + o.model);
  blas::set_num_threads(o.threads);
  // Under mpirun (Open MPI sets OMPI_COMM_WORLD_SIZE): one rank's share of the batch.
  std::unique_ptr<distributed::Communicator> comm;
  if (std::getenv("OMPI_COMM_WORLD_SIZE")) comm = std::make_unique<distributed::Communicator>();
  const int ranks = comm ? comm->size() : 1, rank = comm ? comm->rank() : 0;
  if (model->batch % ranks != 0) throw std::invalid_argument("the batch does not split evenly between the ranks");
  const std::int64_t batch = model->batch / ranks;

  Generator gen(1 + static_cast<std::uint64_t>(rank));
  Network net(*model, gen);
  optim::Adam adam(net.named_parameters(), {.lr = 1e-3});
  std::unique_ptr<distributed::GradientReducer> reducer;
  if (comm) {
    distributed::broadcast_parameters(*comm, net);
    reducer = std::make_unique<distributed::GradientReducer>(
        *comm, net.parameters(), distributed::ReducerOptions{.bucket_bytes = o.bucket_bytes,
                                                         .overlap = !o.no_overlap,
                                                         .progress = o.thread ? distributed::Progress::thread
                                                                              : distributed::Progress::poll});
  }
  const Tensor inputs = model->vocabulary ? random_codes({model->steps, batch}, model->vocabulary, gen)
                                          : normal({model->steps, batch, model->input}, 0, 1, gen);
  const Tensor targets = model->vocabulary ? inputs : normal({model->steps, batch, model->input}, 0, 1, gen);

  double step_seconds = 0, reduce_seconds = 0;
  std::size_t bytes = 0;
  for (long s = 0; s < o.warmup + o.steps; ++s) {
    if (comm) comm->barrier();  // every rank starts the step together
    const auto begin = std::chrono::steady_clock::now();
    {
      Tape tape;
      tape.backward(net.loss(inputs, targets));
    }
    if (reducer && o.barrier_before_finish) comm->barrier();  // finish() then waits for the network only
    if (reducer) reducer->finish();
    adam.step();
    adam.zero_grad();
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - begin).count();
    if (s < o.warmup) continue;
    step_seconds += took;
    if (reducer) {
      reduce_seconds += reducer->stats().finish_seconds;
      bytes = reducer->stats().bytes;
    }
  }
  if (rank == 0)
    std::printf("%s: %d rank(s) x %d thread(s), global batch %lld: %.3f ms/step, %.1f samples/s, "
                "all-reduce %.1f%% of a step, %zu bytes all-reduced per rank per step\n",
                model->name, ranks, o.threads, static_cast<long long>(model->batch), 1e3 * step_seconds / o.steps,
                static_cast<double>(model->batch) * o.steps / step_seconds, 100 * reduce_seconds / step_seconds, bytes);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  CLI::App app("Data-parallel training throughput: ranks x threads on the char-LSTM and LSTM M", "recur_bench_data_parallel");
  app.add_option("--model", o.model, "lstm_m or char_lstm");
  app.add_option("--threads", o.threads, "OpenBLAS threads per process");
  app.add_option("--steps", o.steps, "timed steps");
  app.add_option("--warmup", o.warmup, "untimed steps first");
  app.add_option("--bucket-bytes", o.bucket_bytes, "gradient bucket size");
  app.add_flag("--no-overlap", o.no_overlap, "all-reduce after backward instead of during it");
  app.add_flag("--thread", o.thread, "a communication thread moves the all-reduces on (default: backward polls)");
  app.add_flag("--barrier-before-finish", o.barrier_before_finish,
               "ranks meet before finish(), so that with --no-overlap it times the all-reduce alone, "
               "not also the wait for a slower rank (scripts/bench_netem.sh)");
  CLI11_PARSE(app, argc, argv);
  try {
    return run(o);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "recur_bench_data_parallel: error: %s\n", e.what());
    return 1;
  }
}
