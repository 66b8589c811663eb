#pragma once
// The BLAS calls recur makes (OpenBLAS underneath). Matrices are row-major; transposes are
// flags, never copies.
#include <cstdint>

namespace recur::blas {

// C[M,N] = alpha * op(A) * op(B) + beta * C, op(X) = X or X^T; lda/ldb/ldc are row strides.
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, float alpha,
          const float* a, std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c,
          std::int64_t ldc);
void gemm(bool trans_a, bool trans_b, std::int64_t m, std::int64_t n, std::int64_t k, double alpha,
          const double* a, std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c,
          std::int64_t ldc);

// OpenBLAS's thread count (benchmarks set it equal to the peer's); OPENBLAS_NUM_THREADS
// sets it as the program loads. In OpenBLAS's OpenMP build it is the calling thread's
// OpenMP thread count, which oneDNN's products follow too.
void set_num_threads(int n);
int num_threads();

}  // namespace recur::blas
