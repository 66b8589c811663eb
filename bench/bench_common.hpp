#pragma once
// What both sides of the comparison share: the shapes, the input data and the way results
// are reported, so that recur_bench and recur_bench_torch measure exactly the same work.
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <random>
#include <vector>

#include <benchmark/benchmark.h>

namespace bench {

// Thread settings of both sides (OpenBLAS, and LibTorch's intra-op pool).
constexpr int kThreads = 2;

// Recording overhead: elementwise ops on a [1, 32] float32 tensor, in chains of kChain ops.
constexpr std::int64_t kRows = 1, kCols = 32;
constexpr int kChain = 100;

// matmul: [M, K] x [K, N], gradients to both operands.
constexpr std::int64_t kM = 64, kK = 1024, kN = 1024;
// forward C = A B, then dA = G B^T and dB = A^T G: three gemms of 2 M K N flops each.
constexpr double kMatmulFlops = 3.0 * 2.0 * kM * kK * kN;

// scan overhead: h = tanh(h + x_t) on [kRows, kCols], kScanSteps steps, forward + backward.
constexpr std::int64_t kScanSteps = 1000;

// Recomputation: an LSTM-like cell, batch kBatch, input kInput, hidden kHidden, over
// kLstmSteps steps; gates = x_t Wx + h Wh + b of shape [kBatch, 4 kHidden].
constexpr std::int64_t kBatch = 16, kInput = 64, kHidden = 256, kLstmSteps = 2000;
// Its inputs, alike on both sides: xs [T, B, I] uniform in [-1, 1) from seed kLstmSeed,
// Wx [I, 4H], Wh [H, 4H] and b [4H] uniform in [-1/sqrt(H), 1/sqrt(H)) (PyTorch's LSTM
// initialization) from the next three seeds; h0 = c0 = 0.
constexpr float kLstmInit = 0.0625f;
constexpr unsigned kLstmSeed = 11;

// n floats uniform in [lo, hi), the same sequence for a given seed on both sides.
inline std::vector<float> uniform(std::int64_t n, float lo, float hi, unsigned seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(static_cast<std::size_t>(n));
  for (auto& x : v) x = dist(gen);
  return v;
}

// Reports the time per op (seconds, wall clock) as the counter "per_op"; an iteration
// performs `ops_per_iteration` ops. Benchmarks are registered with UseRealTime(), because
// BLAS threads do work that the main thread's CPU time does not see.
inline void report_per_op(benchmark::State& state, double ops_per_iteration) {
  state.counters["per_op"] = benchmark::Counter(
      ops_per_iteration, benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
}

// Runs `subject` and `reference` back to back in every iteration (in alternating order),
// each timed: both see the same machine state, so their ratio survives other processes
// taking a core, which separate benchmarks do not. Reports the median of the
// per-iteration ratios subject / reference as the counter "paired_ratio".
template <class Subject, class Reference>
void paired_ratio(benchmark::State& state, Subject&& subject, Reference&& reference) {
  using clock = std::chrono::steady_clock;
  std::vector<double> ratios;
  bool reference_first = true;
  for (auto _ : state) {
    const auto t0 = clock::now();
    reference_first ? reference() : subject();
    const auto t1 = clock::now();
    reference_first ? subject() : reference();
    const auto t2 = clock::now();
    const double first = std::chrono::duration<double>(t1 - t0).count();
    const double second = std::chrono::duration<double>(t2 - t1).count();
    ratios.push_back(reference_first ? second / first : first / second);
    reference_first = !reference_first;
  }
  std::sort(ratios.begin(), ratios.end());
  const std::size_t n = ratios.size();
  state.counters["paired_ratio"] = n == 0 ? 0.0 : (ratios[(n - 1) / 2] + ratios[n / 2]) / 2;
}

// Flop rate of the matmul forward + backward.
inline void report_matmul_flops(benchmark::State& state) {
  state.counters["flops"] = benchmark::Counter(kMatmulFlops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace bench
