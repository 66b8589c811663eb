// recur_bench: OpenBLAS on bench::kThreads threads, as on the LibTorch side.
//   recur_bench --switched_blas_core: prints the OpenBLAS core recur moved OpenBLAS to
//   (nothing when it left OpenBLAS's own choice), for scripts/bench.sh's LibTorch run on the
//   same kernels.
#include <iostream>
#include <string>
#include <string_view>

#include <recur/core/blas_kernel.hpp>

#include "recur_side.hpp"

int main(int argc, char** argv) {
  const recur::BlasInfo blas = recur::blas_info();
  if (argc == 2 && std::string_view(argv[1]) == "--switched_blas_core") {
    if (blas.switched) std::cout << blas.core << '\n';
    return 0;
  }
  bench::use_bench_threads();
  benchmark::AddCustomContext("side", "recur");
  benchmark::AddCustomContext("blas_threads", std::to_string(recur::blas::num_threads()));
  benchmark::AddCustomContext("blas_core", blas.core);
  benchmark::AddCustomContext("blas_switched", blas.switched ? "1" : "0");
  benchmark::AddCustomContext("blas_reason", blas.reason);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
