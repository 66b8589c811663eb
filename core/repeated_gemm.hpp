#pragma once
// One product shape run many times with the same right-hand matrix: a recurrent weight
// over a sequence's steps, C = A W (+ C) at every step with a new A of a few rows. Up to a
// few tens of MFLOP (the S, M and TBPTT configurations of the RNN suite) it runs on
// libxsmm's JIT kernels, made once for the shape, on the calling thread: OpenBLAS's fixed
// cost per call (checks, packing W again) is most of a small product, and OpenBLAS's threads
// turn a busy machine's scheduling delays into a delay at every step. Larger products stay
// on OpenBLAS, whose threads pay there. Where libxsmm is not built in, has no kernel for the
// shape (a CPU without AVX, say) or is switched off, the product is OpenBLAS's gemm, as
// everywhere else. Measured, both ways: docs/performance.md, "Per-step products".
//
// RECUR_STEP_GEMM=openblas in the environment, or set_step_gemm(StepGemm::openblas), sends
// every such product to OpenBLAS; the default, StepGemm::libxsmm, uses libxsmm where it can.
#include <cstdint>
#include <memory>
#include <vector>

namespace recur::blas {

enum class StepGemm { libxsmm, openblas };
void set_step_gemm(StepGemm which);  // for the process, from now on
StepGemm step_gemm();
bool libxsmm_built_in();

// C[m, n] = A[m, k] op(B) + beta C, row-major with row strides lda, ldc; op(B) = B [k, n]
// (ldb), or with b_transposed, B is stored as [n, k] (ldb) and op(B) its transpose.
template <class T>
class RepeatedGemm {
 public:
  RepeatedGemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* b, std::int64_t ldb, bool b_transposed,
               std::int64_t lda, std::int64_t ldc, T beta);
  ~RepeatedGemm();
  RepeatedGemm(const RepeatedGemm&) = delete;
  RepeatedGemm& operator=(const RepeatedGemm&) = delete;

  void operator()(const T* a, T* c) const;
  // "libxsmm" or "openblas": what this product runs on.
  const char* backend() const;

 private:
  struct Kernels;
  std::int64_t m_, n_, k_, ldb_, lda_, ldc_;
  const T* b_;
  bool b_transposed_;
  T beta_;
  std::vector<T> b_columns_;        // B as [k, n], when it was given transposed
  std::unique_ptr<Kernels> kernels_;  // null: OpenBLAS
};

extern template class RepeatedGemm<float>;
extern template class RepeatedGemm<double>;

}  // namespace recur::blas
