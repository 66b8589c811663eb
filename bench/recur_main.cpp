// recur_bench: OpenBLAS on bench::kThreads threads, as on the LibTorch side.
#include <string>

#include <recur/core/blas.hpp>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  recur::blas::set_num_threads(bench::kThreads);
  benchmark::AddCustomContext("side", "recur");
  benchmark::AddCustomContext("blas_threads", std::to_string(recur::blas::num_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
