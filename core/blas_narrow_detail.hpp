#pragma once
// Internal (core/blas.cpp): two shapes of product that OpenBLAS runs below its speed, and
// what gemm runs instead.
//
// 1. Products with a short inner size k (an input projection x W^T over a sequence's rows)
// run in blocks of kRowBlock rows on libxsmm (RepeatedGemm: its JIT kernel for the block, B
// laid out once, the tiles shared over recur's threads where a block is large enough to
// share). OpenBLAS zeroes C in a pass of its own first (beta = 0) and packs B for the
// product, and with k of 128 or less that is much of the work. Measured here (2 threads,
// Cooperlake kernels, float, m in {2048, 3200}, n in {256, 1024}): blocks of 64 rows take
// 0.49-0.78 of OpenBLAS's time for k in {32, 64, 128}, 0.74-0.99 at k = 256 (left to
// OpenBLAS); blocks of 32 rows 0.51-0.95. An LSTM's input product at M ([3200, 64] x
// [64, 1024]) 1.23 against 1.98 ms.
//
// 2. Products with few columns run transposed: on OpenBLAS's AVX-512 kernels; on the others
// where A is read transposed (a weight gradient, dW_ih = dG^T x) and the product is larger.
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
// The same grid on a 2-core AVX2 EPYC (Zen 3) on OpenBLAS's Zen kernels, two runs: within
// that shape, with A transposed, k >= 128 and m n k >= 16M: 0.42-0.98 (one 1.05: double,
// [3200, 64] with k 256), an LSTM's dW_ih at M ([1024, 3200] x [3200, 64]) 0.73-0.81; with A
// transposed and k = 64 up to 1.27, with A plain 0.76-1.41 (A plain keeps the direct form).
// The bound k >= 128 lies between the grid's 64 and 256, where nothing was measured.
#include <cstdint>

namespace recur::blas::detail {

inline constexpr std::int64_t kRowBlock = 64, kRowBlocksMaxInner = 128, kRowBlocksMinBlocks = 4;
// A block's own product (kRowBlock rows, run on OpenBLAS where libxsmm makes no kernel) must
// not take the row blocks again.
static_assert(kRowBlocksMinBlocks > 1);

// Whether gemm runs C = op(A) op(B) (A not transposed, alpha = 1) in row blocks: beta = 0,
// k <= kRowBlocksMaxInner, at least kRowBlocksMinBlocks blocks, a block's product on libxsmm
// in tiles of a size that recur's threads share (RepeatedGemm::libxsmm_tiles_of_shared_size),
// and OpenBLAS's threads sleeping when idle (OMP_WAIT_POLICY=PASSIVE), where the tiles are
// shared: on one thread the blocks would lose to OpenBLAS's two. Not whether a product's tiles
// are shared then (StepSplit, a busy machine's back-off): the kernels, and so the bits, are the
// same either way.
template <class T>
bool runs_in_row_blocks(std::int64_t m, std::int64_t n, std::int64_t k, double beta);

// Tests: `always` takes row blocks where the shape allows whatever OMP_WAIT_POLICY says,
// `never` never; `automatic` (the default) as above. For the process, from now on.
enum class RowBlocks { automatic, always, never };
void set_row_blocks(RowBlocks which);

inline constexpr std::int64_t kNarrowColumns = 64, kNarrowRowsPerColumn = 8, kNarrowMinWork = std::int64_t{1} << 22;
// On the other kernel sets: A transposed, k at least this, m n k at least this.
inline constexpr std::int64_t kNarrowMinInnerOtherKernels = 128, kNarrowMinWorkOtherKernels = std::int64_t{1} << 24;

// Whether gemm runs C = alpha op(A) op(B) + beta C transposed: the shape above, beta = 0 (C
// is only written), and OpenBLAS on an AVX-512 kernel set; on another, with op(A) = A^T
// (`a_transposed`) and the larger shape above.
bool runs_transposed(std::int64_t m, std::int64_t n, std::int64_t k, double beta, bool a_transposed);

// Tests: where the transposed form runs, for the process from now on, so that both forms
// are tested on any CPU. `measured` (the default) as above; `any` on every kernel set for
// every op(A) (the shape rule for AVX-512 still applies); `none` nowhere.
enum class NarrowTransposed { measured, any, none };
void set_narrow_transposed(NarrowTransposed which);

}  // namespace recur::blas::detail
