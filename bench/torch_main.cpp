// recur_bench_torch: the LibTorch peer, with the thread settings of recur_bench (see
// torch_side.hpp).
#include <string>

#include "torch_side.hpp"

int main(int argc, char** argv) {
  bench::use_bench_threads();
  benchmark::AddCustomContext("side", "libtorch");
  benchmark::AddCustomContext("blas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("torch_threads", std::to_string(torch::get_num_threads()));
  benchmark::AddCustomContext("blas_core", openblas_get_corename());
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
