#pragma once
// What the oneDNN benchmark programs share: the thread settings of the other sides.
#include <omp.h>

#include "bench_common.hpp"

namespace bench {

// oneDNN's CPU primitives run on OpenMP (Debian's build): kThreads threads, like OpenBLAS and
// LibTorch's pool on the other sides. The script exports OMP_WAIT_POLICY=PASSIVE as for them.
inline void use_bench_threads() { omp_set_num_threads(kThreads); }

}  // namespace bench
