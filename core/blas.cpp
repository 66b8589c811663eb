#include <recur/core/blas.hpp>

#include <limits>
#include <type_traits>

#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/error.hpp>

// OpenBLAS's own cblas.h (not the alternatives link): it also declares
// openblas_set_num_threads, and its blasint is the width the library was built with.
#include <x86_64-linux-gnu/openblas-pthread/cblas.h>

namespace recur::blas {
namespace {
// OpenBLAS's best kernels for this CPU before main, so before any product runs (see
// blas_kernel.cpp). Here, beside gemm, so that every program that multiplies links it.
[[maybe_unused]] const bool best_kernel_selected = (detail::select_best_kernel_once(), true);

CBLAS_TRANSPOSE flag(bool t) { return t ? CblasTrans : CblasNoTrans; }

// Sizes past blasint's range would wrap around inside BLAS.
void check_sizes(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc) {
  for (std::int64_t v : {m, n, k, lda, ldb, ldc})
    if (v > std::numeric_limits<blasint>::max())
      fail<ShapeError>("gemm", "a dimension of ", v, " exceeds BLAS's integer range (m=", m, ", n=", n, ", k=", k, ")");
}

// One body for both precisions: cblas_sgemm and cblas_dgemm take the same arguments.
template <class T>
void gemm_as(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
             const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  check_sizes(m, n, k, lda, ldb, ldc);
  constexpr auto cblas_gemm = [] {
    if constexpr (std::is_same_v<T, float>) return cblas_sgemm;
    else return cblas_dgemm;
  }();
  cblas_gemm(CblasRowMajor, flag(ta), flag(tb), static_cast<blasint>(m), static_cast<blasint>(n),
             static_cast<blasint>(k), alpha, a, static_cast<blasint>(lda), b, static_cast<blasint>(ldb), beta, c,
             static_cast<blasint>(ldc));
}
}  // namespace

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  gemm_as(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  gemm_as(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void set_num_threads(int n) { openblas_set_num_threads(n); }
int num_threads() { return openblas_get_num_threads(); }

}  // namespace recur::blas
