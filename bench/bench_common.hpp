#pragma once
// What both sides of the comparison share: the shapes, the input data and the way results
// are reported, so that recur_bench and recur_bench_torch measure exactly the same work.
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

// Flop rate of the matmul forward + backward.
inline void report_matmul_flops(benchmark::State& state) {
  state.counters["flops"] = benchmark::Counter(kMatmulFlops, benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace bench
