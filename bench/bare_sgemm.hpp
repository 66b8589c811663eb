#pragma once
// The floor for matmul forward + backward: the three OpenBLAS calls it needs, on buffers
// allocated once, with the operands of bench_common.hpp.
#include <vector>

#include <recur/core/openblas_cblas_detail.hpp>

#include "bench_common.hpp"

namespace bench {

class BareSgemm {
 public:
  BareSgemm()
      : a_(uniform(kM * kK, -1.f, 1.f, 1)), b_(uniform(kK * kN, -1.f, 1.f, 2)), g_(uniform(kM * kN, -1.f, 1.f, 3)),
        c_(kM * kN), da_(kM * kK), db_(kK * kN) {}

  void run() {
    constexpr int m = kM, k = kK, n = kN;
    // C[m,n] = A[m,k] B[k,n]
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, m, n, k, 1.f, a_.data(), k, b_.data(), n, 0.f, c_.data(), n);
    // dA[m,k] = G[m,n] B[k,n]^T
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, m, k, n, 1.f, g_.data(), n, b_.data(), n, 0.f, da_.data(), k);
    // dB[k,n] = A[m,k]^T G[m,n]
    cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, k, n, m, 1.f, a_.data(), k, g_.data(), n, 0.f, db_.data(), n);
    benchmark::DoNotOptimize(c_.data());
    benchmark::DoNotOptimize(da_.data());
    benchmark::DoNotOptimize(db_.data());
    benchmark::ClobberMemory();
  }

 private:
  std::vector<float> a_, b_, g_, c_, da_, db_;
};

// `subject` back to back with the bare gemms (see bench::paired_ratio).
template <class Subject>
void paired_with_bare(benchmark::State& state, Subject&& subject) {
  BareSgemm bare;
  paired_ratio(state, subject, [&] { bare.run(); });
}

}  // namespace bench
