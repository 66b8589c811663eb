#pragma once
// What the LibTorch benchmark programs share: the thread settings of the recur side and
// the inputs of bench_common.hpp as torch tensors.
#include <vector>

#include <torch/torch.h>
#include <recur/core/openblas_cblas_detail.hpp>

#include "bench_common.hpp"

namespace bench {

// OpenBLAS (which LibTorch's CPU gemm calls) and LibTorch's intra-op pool on kThreads
// threads. The script exports OMP_WAIT_POLICY=PASSIVE so idle OpenMP workers do not spin
// against the BLAS threads.
inline void use_bench_threads() {
  openblas_set_num_threads(kThreads);
  torch::set_num_threads(kThreads);
}

// A float32 tensor of the given shape, uniform in [lo, hi), the same values as the recur
// side's for the same seed.
inline torch::Tensor uniform_tensor(const std::vector<std::int64_t>& shape, float lo, float hi, unsigned seed) {
  std::int64_t n = 1;
  for (auto d : shape) n *= d;
  return torch::tensor(uniform(n, lo, hi, seed)).reshape(shape);
}

// Reads and drops the gradient of a leaf, so every iteration starts alike.
inline void take_grad(const torch::Tensor& leaf) {
  benchmark::DoNotOptimize(leaf.grad().data_ptr());
  leaf.mutable_grad().reset();
}

}  // namespace bench
