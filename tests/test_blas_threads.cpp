// recur's one thread setting, OPENBLAS_NUM_THREADS, holds whichever OpenBLAS build runs: the
// OpenMP build ignores the variable by itself (it follows the calling thread's OpenMP count),
// and recur applies it as it loads and on every thread that multiplies (core/blas.cpp). ctest runs this with OPENBLAS_NUM_THREADS=1 set
// (blas_threads_env); without the variable it is skipped.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <thread>

#include <dlfcn.h>

#include <recur/core/blas_threads_detail.hpp>
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

// The calling thread's OpenMP count, which OpenBLAS's OpenMP build reads at each call.
struct OpenmpCount {
  int (*get)() = reinterpret_cast<int (*)()>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
  void (*set)(int) = reinterpret_cast<void (*)(int)>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
};

// A product below kOneThreadBelow (m n k) runs with the calling thread's OpenMP count at 1,
// which OpenBLAS then reads as one thread; the count is back as it was after it, and larger
// products keep it.
TEST(BlasThreads, SmallProductsRunOnTheCallingThreadAlone) {
  if (!blas::detail::blas_runs_on_openmp()) GTEST_SKIP() << "OpenBLAS's pthreads build: its thread count is global";
  if (std::getenv("OPENBLAS_NUM_THREADS")) GTEST_SKIP() << "OPENBLAS_NUM_THREADS sets every product's count (blas_threads_env)";
  const OpenmpCount omp;
  ASSERT_TRUE(omp.get && omp.set);
  const int before = omp.get();
  omp.set(2);
  using blas::detail::kOneThreadBelow;
  using blas::detail::OneThreadForSmallProducts;
  {
    const OneThreadForSmallProducts small(200, 128, 16);  // an LSTM's input product at B = 1, H = 32
    EXPECT_EQ(omp.get(), 1);
  }
  EXPECT_EQ(omp.get(), 2);
  {
    const OneThreadForSmallProducts just_below(1, 1, kOneThreadBelow - 1);
    EXPECT_EQ(omp.get(), 1);
  }
  {
    const OneThreadForSmallProducts at(1, 1, kOneThreadBelow), large(256, 256, 256), empty(0, 7, 7);
    EXPECT_EQ(omp.get(), 1);  // the empty product's, the last made
  }
  EXPECT_EQ(omp.get(), 2);
  {
    const OneThreadForSmallProducts at(1, 1, kOneThreadBelow), large(256, 256, 256);
    EXPECT_EQ(omp.get(), 2);
  }
  // Through matmul: the count is back after a small product, and its values are the sums.
  Generator gen(3);
  const Tensor a = uniform({5, 3}, -1, 1, gen, DType::float64), b = uniform({3, 4}, -1, 1, gen, DType::float64);
  const Tensor c = matmul(a, b);
  EXPECT_EQ(omp.get(), 2);
  for (std::int64_t i = 0; i < 5; ++i)
    for (std::int64_t j = 0; j < 4; ++j) {
      double sum = 0;
      for (std::int64_t k = 0; k < 3; ++k) sum += a.at<double>({i, k}) * b.at<double>({k, j});
      EXPECT_NEAR(c.at<double>({i, j}), sum, 1e-15) << i << ", " << j;
    }
  omp.set(before);
}

}  // namespace
}  // namespace recur
