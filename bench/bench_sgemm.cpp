// The bare-sgemm floor as a benchmark of its own. Compiled into both benchmark binaries,
// so each side is compared with the BLAS it runs on, in the same process.
#include "bare_sgemm.hpp"

namespace {

void sgemm_bare(benchmark::State& state) {
  bench::BareSgemm bare;
  for (auto _ : state) bare.run();
  bench::report_per_op(state, 1);
  bench::report_matmul_flops(state);
}

BENCHMARK(sgemm_bare)->Name("matmul/sgemm_bare")->UseRealTime();

}  // namespace
