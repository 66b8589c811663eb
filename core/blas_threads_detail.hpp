#pragma once
// Internal: which pool runs OpenBLAS's threads, and recur's thread count on it (core/blas.cpp).

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

}  // namespace recur::blas::detail
