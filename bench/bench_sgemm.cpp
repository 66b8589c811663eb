// The bare-sgemm floor as a benchmark of its own, and OpenBLAS's peak on a large square
// sgemm. Compiled into both benchmark binaries, so each side is compared with the BLAS it
// runs on, in the same process.
#include "bare_sgemm.hpp"

namespace {

void sgemm_bare(benchmark::State& state) {
  bench::BareSgemm bare;
  for (auto _ : state) bare.run();
  bench::report_per_op(state, 1);
  bench::report_matmul_flops(state);
}

// C = A B on [n, n] matrices, n = 2048: the flop rate OpenBLAS reaches on bench::kThreads
// threads, the bound the RNN suite's matmuls are measured against ("flops").
void sgemm_peak(benchmark::State& state) {
  constexpr int n = 2048;
  const std::vector<float> a = bench::uniform(n * n, -1.f, 1.f, 1), b = bench::uniform(n * n, -1.f, 1.f, 2);
  std::vector<float> c(static_cast<std::size_t>(n) * n);
  for (auto _ : state) {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.f, a.data(), n, b.data(), n, 0.f, c.data(), n);
    benchmark::DoNotOptimize(c.data());
    benchmark::ClobberMemory();
  }
  bench::report_per_op(state, 1);
  state.counters["flops"] = benchmark::Counter(2.0 * n * n * n, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(sgemm_bare)->Name("matmul/sgemm_bare")->UseRealTime();
BENCHMARK(sgemm_peak)->Name("matmul/sgemm_peak")->UseRealTime()->MinTime(0.5)->Unit(benchmark::kMillisecond);

}  // namespace
