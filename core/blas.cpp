#include <recur/core/blas.hpp>

#include <x86_64-linux-gnu/openblas-pthread/cblas.h>

namespace recur::blas {
namespace {
CBLAS_TRANSPOSE flag(bool t) { return t ? CblasTrans : CblasNoTrans; }
}  // namespace

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  cblas_sgemm(CblasRowMajor, flag(ta), flag(tb), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
              beta, c, static_cast<blasint>(ldc));
}

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  cblas_dgemm(CblasRowMajor, flag(ta), flag(tb), static_cast<blasint>(m), static_cast<blasint>(n),
              static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb),
              beta, c, static_cast<blasint>(ldc));
}

void set_num_threads(int n) { openblas_set_num_threads(n); }
int num_threads() { return openblas_get_num_threads(); }

}  // namespace recur::blas
