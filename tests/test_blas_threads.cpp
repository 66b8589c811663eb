// recur's one thread setting, OPENBLAS_NUM_THREADS, holds whichever OpenBLAS build runs: the
// OpenMP build ignores the variable by itself (it follows the calling thread's OpenMP count),
// and recur applies it as it loads and on every thread that multiplies (core/blas.cpp). ctest runs this with OPENBLAS_NUM_THREADS=1 set
// (blas_threads_env); without the variable it is skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include <recur/recur.hpp>

namespace recur {
namespace {

TEST(BlasThreads, OpenblasNumThreadsIsTheThreadCount) {
  const char* v = std::getenv("OPENBLAS_NUM_THREADS");
  if (!v || std::string(v) != "1") GTEST_SKIP() << "run with OPENBLAS_NUM_THREADS=1 (ctest: blas_threads_env)";
  EXPECT_EQ(blas::num_threads(), 1);
  // A product on another thread too: OpenMP's count is per thread, and OpenBLAS's OpenMP
  // build takes the calling thread's (for the whole process) when it splits a product.
  std::thread other([] {
    Generator gen(1);
    const Tensor a = uniform({256, 256}, -1, 1, gen);
    const Tensor product = matmul(a, a);
    EXPECT_EQ(product.size(0), 256);
  });
  other.join();
  EXPECT_EQ(blas::num_threads(), 1);
}

}  // namespace
}  // namespace recur
