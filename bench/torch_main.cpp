// recur_bench_torch: the LibTorch peer, with the thread settings of recur_bench (OpenBLAS,
// which LibTorch's CPU gemm calls, and LibTorch's own intra-op pool). The script exports
// OMP_WAIT_POLICY=PASSIVE so idle OpenMP workers do not spin against the BLAS threads.
#include <string>

#include <torch/torch.h>
#include <x86_64-linux-gnu/openblas-pthread/cblas.h>

#include "bench_common.hpp"

int main(int argc, char** argv) {
  openblas_set_num_threads(bench::kThreads);
  torch::set_num_threads(bench::kThreads);
  benchmark::AddCustomContext("side", "libtorch");
  benchmark::AddCustomContext("blas_threads", std::to_string(openblas_get_num_threads()));
  benchmark::AddCustomContext("torch_threads", std::to_string(torch::get_num_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
