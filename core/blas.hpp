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

// B = A^T, once (weights a sequence reads transposed at every step): A is rows x cols with
// row stride lda, B cols x rows with row stride ldb. OpenBLAS's omatcopy, on the calling
// thread: a plain double loop writes with a stride of `rows` elements and took 30x as long
// for a [1024, 256] float matrix (1.9 ms against 60 us, measured).
void transpose(std::int64_t rows, std::int64_t cols, const float* a, std::int64_t lda, float* b, std::int64_t ldb);
void transpose(std::int64_t rows, std::int64_t cols, const double* a, std::int64_t lda, double* b, std::int64_t ldb);

// OpenBLAS's thread count (benchmarks set it equal to the peer's); OPENBLAS_NUM_THREADS
// sets it as the program loads. In OpenBLAS's OpenMP build it is the calling thread's
// OpenMP thread count, which oneDNN's products follow too.
void set_num_threads(int n);
int num_threads();

}  // namespace recur::blas
