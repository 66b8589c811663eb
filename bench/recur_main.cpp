// recur_bench: OpenBLAS on bench::kThreads threads, as on the LibTorch side.
#include <string>

#include "recur_side.hpp"

int main(int argc, char** argv) {
  bench::use_bench_threads();
  benchmark::AddCustomContext("side", "recur");
  benchmark::AddCustomContext("blas_threads", std::to_string(recur::blas::num_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
