#pragma once
// What the recur benchmark programs share: the thread settings and the inputs of
// bench_common.hpp as recur tensors.
#include <recur/recur.hpp>

#include "bench_common.hpp"

namespace bench {

// OpenBLAS on kThreads threads, as on the LibTorch side (torch_side.hpp).
inline void use_bench_threads() { recur::blas::set_num_threads(kThreads); }

// A float32 tensor of the given shape, uniform in [lo, hi), the same values as the
// LibTorch side's for the same seed.
inline recur::Tensor uniform_tensor(const recur::Shape& shape, float lo, float hi, unsigned seed) {
  return recur::from_vector(uniform(recur::numel(shape), lo, hi, seed), shape);
}

}  // namespace bench
