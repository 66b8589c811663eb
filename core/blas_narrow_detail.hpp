#pragma once
// Internal (core/blas.cpp): products with few columns run transposed on OpenBLAS's AVX-512
// kernels.
//
// Row-major C[m, n] is column-major C^T, so OpenBLAS tiles the kernel's wide dimension along
// n. Its AVX-512 kernel sets (SkylakeX, Cooperlake, SapphireRapids) tile it wide, and with
// n of 64 or less most of each tile is wasted. Such a product runs faster as
// C^T[n, m] = op(B)^T op(A)^T into scratch, then transposed into C (omatcopy).
//
// Measured on a 2-core AVX-512 EPYC on Cooperlake's kernels, in float and double, for
// m in {512, 3200, 12800}, n in {16, 32, 64, 128} and k in {64, 256, 1024}, with A plain
// and transposed; time transposed / direct:
//  - n <= 64, m >= 8 n, m n k >= 4M: 0.32-0.99, e.g. an LSTM's dX = dG W_ih at M
//    ([3200, 1024] x [1024, 64]) 0.65, its dW_ih = dG^T x 0.64;
//  - smaller products: up to 1.64 (m n k = 2.1M: 0.70-1.23);
//  - n = 128: 0.79-1.26.
// Other kernel sets were not measured: they keep the direct product.
#include <cstdint>

namespace recur::blas::detail {

inline constexpr std::int64_t kNarrowColumns = 64, kNarrowRowsPerColumn = 8, kNarrowMinWork = std::int64_t{1} << 22;

// Whether gemm runs C = alpha op(A) op(B) + beta C transposed: the shape above, beta = 0 (C
// is only written), and OpenBLAS on an AVX-512 kernel set.
bool runs_transposed(std::int64_t m, std::int64_t n, std::int64_t k, double beta);

// Tests: which kernel sets take the transposed form, for the process from now on, so that
// both forms are tested on any CPU. `avx512` (the default) as above; `any` on every kernel
// set (the shape rule still applies); `none` on none.
enum class NarrowTransposed { avx512, any, none };
void set_narrow_transposed(NarrowTransposed which);

}  // namespace recur::blas::detail
