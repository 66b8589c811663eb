#pragma once
// Internal: which pool runs OpenBLAS's threads, and recur's thread count on it (core/blas.cpp).

#include <cstdint>

namespace recur::blas::detail {

// Whether the OpenBLAS this process runs is its OpenMP build (openblas_get_parallel() == 2):
// then OpenBLAS's threads, oneDNN's and any other OpenMP code's are one pool.
bool blas_runs_on_openmp();

// Whether OpenBLAS's threads sleep as soon as a product ends (its OpenMP build under
// OMP_WAIT_POLICY=PASSIVE, read at start-up as OpenMP reads it). Otherwise they spin for a
// while after each product, on the cores other threads of recur would use.
bool blas_threads_sleep_when_idle();

// On the OpenMP build, sets the calling thread's OpenMP count to recur's thread setting
// (OPENBLAS_NUM_THREADS or blas::set_num_threads) before a product: OpenMP's count is per
// thread, and OpenBLAS and oneDNN take the calling thread's. Nothing otherwise.
void match_thread_count();

// Below this m n k a product runs on the calling thread alone (OpenBLAS's OpenMP build). From
// OpenBLAS's own threshold (GEMM_MULTITHREAD_THRESHOLD 4: m n k of 65536 * 4) threads start
// for products whose waking costs more than they save: on a 2-core AVX-512 machine, x W^T of
// [200, 16] by [16, 128] (an LSTM's input product at B = 1, H = 32) took 23 us on two threads
// against 6.3 us on one. Julia builds OpenBLAS with the threshold at 50, the value used here
// (m n k of 65536 * 50, 6.5 MFLOP); above it two threads won in every shape measured
// (m n k = 8.4M: 127 against 176 us).
inline constexpr std::int64_t kOneThreadBelow = 65536 * 50;

// For its lifetime, the calling thread's OpenMP count is 1 when the product m n k is below
// kOneThreadBelow (OpenBLAS's OpenMP build reads it at each call); restored after. Nothing on
// the pthreads build, whose count is global.
class OneThreadForSmallProducts {
 public:
  OneThreadForSmallProducts(std::int64_t m, std::int64_t n, std::int64_t k);
  ~OneThreadForSmallProducts();
  OneThreadForSmallProducts(const OneThreadForSmallProducts&) = delete;
  OneThreadForSmallProducts& operator=(const OneThreadForSmallProducts&) = delete;

 private:
  int restore_ = 0;
};

}  // namespace recur::blas::detail
