#pragma once
// The RNN suite, shared by all sides: an Elman RNN (tanh), an LSTM and a GRU (PyTorch's,
// which resets after the hidden product), one layer, float32, in four configurations. A
// training step is the forward pass over T steps, the mean
// squared error of every step's output against a fixed random target, and backward to
// every weight (not to the input). TBPTT runs the M shapes over a longer sequence in
// chunks, each chunk its own backward from the state the previous one carried, detached;
// its training step is the whole sequence. Gradients are dropped after every step.
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include "bench_common.hpp"

namespace bench::rnn {

enum class Cell { rnn, lstm, gru };

inline const char* cell_name(Cell cell) {
  switch (cell) {
    case Cell::lstm: return "lstm";
    case Cell::gru: return "gru";
    default: return "rnn";
  }
}
// Gate count G: the weights are [G H, I] and [G H, H].
inline std::int64_t gates(Cell cell) {
  switch (cell) {
    case Cell::lstm: return 4;
    case Cell::gru: return 3;
    default: return 1;
  }
}

struct Config {
  const char* name;
  std::int64_t batch, input, hidden, steps;
  std::int64_t chunk;  // steps per backward; == steps for full BPTT
};

inline constexpr Config kConfigs[] = {
    {"S", 1, 16, 32, 200, 200},
    {"M", 32, 64, 256, 100, 100},
    {"L", 64, 512, 1024, 50, 50},
    {"TBPTT", 32, 64, 256, 1000, 50},
};

// The LSTM of the memory programs (bench_common.hpp's recomputation shapes), full BPTT.
inline constexpr Config kMemoryConfig = {"memory", kBatch, kInput, kHidden, kLstmSteps, kLstmSteps};

// Inputs, alike on both sides: xs [T, B, I] and the target [T, B, H] uniform in [-1, 1)
// from seeds kSeed and kSeed + 1; the parameters (param_specs) uniform in
// [-1/sqrt(H), 1/sqrt(H)) (PyTorch's initialization) from the seeds after.
inline constexpr unsigned kSeed = 31;

inline float init_bound(const Config& config) { return 1.f / std::sqrt(static_cast<float>(config.hidden)); }

// One parameter: PyTorch's name (recur's layers use the same), shape and seed.
struct ParamSpec {
  const char* name;
  std::vector<std::int64_t> shape;
  unsigned seed;
};

inline std::vector<ParamSpec> param_specs(Cell cell, const Config& config) {
  const std::int64_t gh = gates(cell) * config.hidden;
  return {{"weight_ih_l0", {gh, config.input}, kSeed + 2},
          {"weight_hh_l0", {gh, config.hidden}, kSeed + 3},
          {"bias_ih_l0", {gh}, kSeed + 4},
          {"bias_hh_l0", {gh}, kSeed + 5}};
}

// Floating-point operations of the matrix products a training step cannot do without, per
// step of the sequence: x W_ih^T and h W_hh^T forward, dW_ih, dW_hh and dh backward (no dx:
// the input takes no gradient). The products with the initial state are counted too.
inline double matmul_flops(Cell cell, const Config& config) {
  const double rows = static_cast<double>(config.steps) * static_cast<double>(config.batch);
  const double gh = static_cast<double>(gates(cell) * config.hidden);
  return 2.0 * rows * gh * (2.0 * static_cast<double>(config.input) + 3.0 * static_cast<double>(config.hidden));
}

// "rnn/<cell>/<config>/<variant>": recur's variant is "recur", LibTorch's "manual" (a loop
// of torch ops with autograd) and "nn" (torch::nn::RNN / LSTM / GRU), oneDNN's
// "onednn" (its RNN primitives).
inline std::string benchmark_name(Cell cell, const Config& config, const char* variant) {
  return std::string("rnn/") + cell_name(cell) + "/" + config.name + "/" + variant;
}

// Each iteration is one training step. The counters: "per_op" (seconds per step),
// "matmul_flops" (per step, for the fraction of the sgemm bound) and "loss" (of the last
// step: the mean over chunks of each chunk's loss), which must agree between the sides.
inline void report_step(benchmark::State& state, Cell cell, const Config& config, double loss) {
  report_per_op(state, 1);
  state.counters["matmul_flops"] = matmul_flops(cell, config);
  state.counters["loss"] = loss;
}

// Registers fn(state, cell, config) for every cell of `cells` and every configuration under
// benchmark_name(cell, config, variant). Every step is long, so a short minimum time is
// enough; the repetitions (scripts/bench.sh) take care of a busy machine.
template <class Fn>
void register_suite(const char* variant, Fn fn, std::initializer_list<Cell> cells = {Cell::rnn, Cell::lstm, Cell::gru}) {
  for (const Cell cell : cells)
    for (const Config& config : kConfigs)
      benchmark::RegisterBenchmark(benchmark_name(cell, config, variant).c_str(),
                                   [=](benchmark::State& state) { fn(state, cell, config); })
          ->UseRealTime()
          ->MinTime(0.2)
          ->Unit(benchmark::kMillisecond);
}

}  // namespace bench::rnn
