#pragma once
// One product shape run many times with the same right-hand matrix: a recurrent weight
// over a sequence's steps, C = A W (+ C) at every step with a new A of a few rows. The
// backend is chosen once, for the shape and how many products it runs (too few to pay for
// laying W out: OpenBLAS, worth_laying_out below); else:
//  - up to a few tens of MFLOP (the S, M and TBPTT configurations of the RNN suite):
//    libxsmm's JIT kernels, made once for the shape, on column tiles four vector registers
//    wide, the weight laid out once in those tiles' panels, a long inner size in chunks
//    whose part of a panel stays in L2 (repeated_gemm.cpp). OpenBLAS's fixed cost per call
//    (checks, packing W again) is most of a small product, and waking its threads at every step
//    costs about what they save. From 1 MFLOP, where OpenBLAS's threads sleep when idle
//    (StepSplit below), the kernel's column tiles are shared over recur's threads by
//    parallel::for_each_tile, whose helpers stay awake between steps and whose caller takes
//    any tile a helper has not started (a busy machine's scheduling delays then hold up one
//    tile, not the step);
//  - larger float32 products (L's): oneDNN's matmul with W reordered once into its own
//    blocked layout, where OpenBLAS is its OpenMP build, so that both libraries' threads
//    are one pool (with OpenBLAS's own pthreads pool, two pools spin against each other on
//    the same cores, and the step's time depends on which spins when), and where oneDNN
//    does keep W in a layout of its own (its brgemm matmul, on AVX-512 CPUs; on an AVX2 CPU
//    oneDNN 2.6 packs W at every call, and L's training steps took 1.2-1.3x the time they
//    take with OpenBLAS's products);
//  - otherwise OpenBLAS's gemm, as everywhere else (also where libxsmm or oneDNN is not
//    built in or makes no kernel for the shape).
// Measured, every way: docs/performance.md, "Per-step products".
//
// RECUR_STEP_GEMM in the environment (read once), or set_step_gemm(...), overrides this for
// the process: `openblas` sends every such product to OpenBLAS, `libxsmm` keeps the small
// ones on libxsmm and the rest on OpenBLAS, `onednn` sends every float32 product to oneDNN
// (double to OpenBLAS); `auto` (the default) chooses as above. Products too few to pay for
// laying W out run on OpenBLAS whatever the choice.
#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include <recur/core/tile_team.hpp>

namespace recur::blas {
namespace detail {
class OnednnMatmul;
}

enum class StepGemm { automatic, libxsmm, onednn, openblas };
void set_step_gemm(StepGemm which);  // for the process, from now on
StepGemm step_gemm();
// Whether libxsmm's products of 1 MFLOP or more share their tiles over recur's threads:
// `automatic` (the default) where OpenBLAS's threads sleep when idle (OMP_WAIT_POLICY=PASSIVE),
// and alone for a while after a helper was held off its core (a busy machine); `always`
// (every such product, busy or not) or `never`, for the process from now on (products made
// before keep their choice).
enum class StepSplit { automatic, always, never };
void set_step_split(StepSplit which);
StepSplit step_split();
// Whether a loop's per-step work shares over recur's threads now, by StepSplit: products of
// 1 MFLOP or more on libxsmm, a captured step's elementwise chains (large enough); and
// whether what shares backs off after a helper was held off its core (all but `always`).
bool shares_step_work();
bool step_work_backs_off();
// How many tiles a step's elementwise work of `elements` in `parts` independent parts (rows,
// blocks) runs in (for_each_step_range): one per thread where per-step work shares and it
// has at least 8192 elements and two parts (a captured LSTM step's chain, or a fused layer's
// cells, at B32 H256: tens of microseconds, which a helper spinning for the next product
// takes at once); else one.
std::int64_t step_work_tiles(std::int64_t elements, std::int64_t parts);
// f(tile, begin, end) over `parts` in `tiles` fixed ranges (step_work_tiles) on recur's
// threads (parallel::for_each_range), backing off as per-step work does. f must not throw
// or allocate: it may run on a helper.
template <class F>
void for_each_step_range(std::int64_t parts, std::int64_t tiles, const F& f) {
  parallel::for_each_range(parts, tiles, f, step_work_backs_off());
}
bool libxsmm_built_in();
bool onednn_built_in();

namespace detail {
// RepeatedGemm::worth_laying_out's rule, with whether OpenBLAS's kernel set now reads B in
// place for small products (its AVX-512 sets) given: both sides are tested on any machine.
bool worth_laying_out(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t runs,
                      bool openblas_has_small_kernels);
// Tests: libxsmm's products made from now on run their inner size in chunks of at most
// `rows` rows (0, the default: as many as fit a quarter of the L2, repeated_gemm.cpp), so
// that chunks are tested alike whatever a CPU's L2 and tile width.
void set_chunk_rows(std::int64_t rows);
}  // namespace detail

// C[m, n] = A[m, k] op(B) + beta C, row-major with row strides lda, ldc; op(B) = B [k, n]
// (ldb), or with b_transposed, B is stored as [n, k] (ldb) and op(B) its transpose. `runs`:
// how many products it will run at most (a loop's steps; unknown: many). Where they are too
// few to pay for laying B out (worth_laying_out), they run on OpenBLAS.
template <class T>
class RepeatedGemm {
 public:
  RepeatedGemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* b, std::int64_t ldb, bool b_transposed,
               std::int64_t lda, std::int64_t ldc, T beta,
               std::int64_t runs = std::numeric_limits<std::int64_t>::max());
  ~RepeatedGemm();
  RepeatedGemm(const RepeatedGemm&) = delete;
  RepeatedGemm& operator=(const RepeatedGemm&) = delete;

  void operator()(const T* a, T* c) const;
  // "libxsmm", "onednn" or "openblas": what this product runs on.
  const char* backend() const;
  // Whether its tiles are shared over recur's threads (parallel::for_each_tile).
  bool splits() const { return kernels_ && split_; }
  // How many chunks of the inner size each tile runs in (1 unless libxsmm runs it).
  std::int64_t chunks() const;
  // Whether a product of this shape is tried on libxsmm (built in, chosen, small enough) and
  // its tiles are of a size that recur's threads share (1 MFLOP or more) where they share at
  // all (StepSplit, OMP_WAIT_POLICY), asked before one is made (making one may make a oneDNN
  // primitive, reordering B). libxsmm may still make no kernel: the product then runs on
  // OpenBLAS.
  static bool libxsmm_tiles_of_shared_size(std::int64_t m, std::int64_t n, std::int64_t k);
  // Whether `runs` products [m, k] x [k, n] are enough to pay for laying B out for libxsmm
  // or oneDNN: two or more, and 16 rows or more in all where OpenBLAS's kernels read B in
  // place (its AVX-512 kernel sets, small products; repeated_gemm.cpp).
  static bool worth_laying_out(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t runs);

 private:
  struct Kernels;
  bool use_libxsmm();
  void pack_panels(std::int64_t tile);
  std::int64_t m_, n_, k_, ldb_, lda_, ldc_;
  const T* b_;
  bool b_transposed_;
  T beta_;
  bool split_ = false;                // libxsmm's tiles shared over recur's threads (large enough)
  bool split_always_ = false;         // StepSplit::always: shared even on a busy machine
  std::unique_ptr<T[]> b_panels_;     // op(B) for libxsmm: each tile's columns contiguous
  std::unique_ptr<Kernels> kernels_;  // libxsmm's, or null
  std::unique_ptr<detail::OnednnMatmul> onednn_;  // oneDNN's primitive, or null (both null: OpenBLAS)
};

extern template class RepeatedGemm<float>;
extern template class RepeatedGemm<double>;

}  // namespace recur::blas
