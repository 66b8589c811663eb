#pragma once
// Internal to core/repeated_gemm.cpp: oneDNN's matmul primitive as the per-step product's
// backend for large float32 products. B, the same at every step, is reordered once into
// oneDNN's own blocked layout, so no step packs it again (OpenBLAS packs B at every call:
// for L's [64, 1024] x [1024, 4096] that is 16 MB moved per 0.5 GFLOP). oneDNN's threads
// are OpenMP's; they share one pool with OpenBLAS's only when OpenBLAS is its OpenMP build
// (blas_threads_detail.hpp), which is when repeated_gemm.cpp chooses this by itself.
#include <cstdint>
#include <memory>

namespace recur::blas::detail {

bool onednn_built_in();

// C[m, n] = A[m, k] op(B) + beta C with row strides lda, ldc; op(B) = B [k, n] (ldb), or with
// b_transposed B stored [n, k] (ldb) and op(B) its transpose. beta is 0 or 1.
class OnednnMatmul {
 public:
  // Null where oneDNN is not built in or makes no primitive for the product, and with
  // `own_layout_only` where the primitive would read B in a plain layout, row- or
  // column-major, rather than one of oneDNN's own (blocked for its kernels: the brgemm
  // matmul of an AVX-512 CPU). In a plain layout oneDNN's kernel packs B at every call, as
  // OpenBLAS's does (oneDNN 2.6's gemm:jit matmul on an AVX2 CPU, slower there than OpenBLAS
  // on L's products); asked before B is reordered.
  static std::unique_ptr<OnednnMatmul> make(std::int64_t m, std::int64_t n, std::int64_t k, const float* b,
                                            std::int64_t ldb, bool b_transposed, std::int64_t lda, std::int64_t ldc,
                                            float beta, bool own_layout_only = false);
  ~OnednnMatmul();
  OnednnMatmul(const OnednnMatmul&) = delete;
  OnednnMatmul& operator=(const OnednnMatmul&) = delete;

  // C = A op(B) (+ C); false, having written nothing, where oneDNN fails (memory for its
  // scratchpad, say): the caller then takes OpenBLAS. Each call makes its own oneDNN memory
  // objects and stream, so calls from several threads at once are safe.
  bool run(const float* a, float* c) const noexcept;

 private:
  struct Primitive;
  explicit OnednnMatmul(std::unique_ptr<Primitive> p);
  std::unique_ptr<Primitive> p_;
};

}  // namespace recur::blas::detail
