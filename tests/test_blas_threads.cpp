// recur's one thread setting, OPENBLAS_NUM_THREADS, holds whichever OpenBLAS build runs: the
// OpenMP build ignores the variable by itself (it follows OpenMP's count), and recur applies
// it as it loads (core/blas.cpp). ctest runs this with OPENBLAS_NUM_THREADS=1 set
// (blas_threads_env); without the variable it is skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include <recur/recur.hpp>

namespace recur {
namespace {

TEST(BlasThreads, OpenblasNumThreadsIsTheThreadCount) {
  const char* v = std::getenv("OPENBLAS_NUM_THREADS");
  if (!v || std::string(v) != "1") GTEST_SKIP() << "run with OPENBLAS_NUM_THREADS=1 (ctest: blas_threads_env)";
  EXPECT_EQ(blas::num_threads(), 1);
}

}  // namespace
}  // namespace recur
