#include <recur/core/repeated_gemm.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string_view>
#include <type_traits>

#include <unistd.h>

#include <recur/core/blas.hpp>
#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/blas_threads_detail.hpp>
#include <recur/core/onednn_matmul_detail.hpp>
#include <recur/core/openblas_cblas_detail.hpp>
#include <recur/core/tile_team.hpp>

#ifdef RECUR_HAVE_LIBXSMM
#include <libxsmm.h>
#endif

namespace recur::blas {
namespace {

StepGemm initial_choice() {
  const char* v = std::getenv("RECUR_STEP_GEMM");
  const std::string_view s = v ? v : "auto";
  if (s == "openblas") return StepGemm::openblas;
  if (s == "libxsmm") return StepGemm::libxsmm;
  if (s == "onednn") return StepGemm::onednn;
  return StepGemm::automatic;  // "auto", and anything else
}
std::atomic<StepGemm>& choice() {
  static std::atomic<StepGemm> c{initial_choice()};
  return c;
}
std::atomic<StepSplit> split_choice{StepSplit::automatic};
std::atomic<std::int64_t> chunk_rows_for_tests{0};  // detail::set_chunk_rows

// Products of at most this many flops (2 m n k) run on libxsmm under any choice but
// `openblas` and `onednn`: the S and M configurations and TBPTT's (up to 17 MFLOP), not L's
// (537; those too where their tiles are shared: the constructor). Measured on the RNN
// suite against OpenBLAS's two threads (docs/performance.md, "Per-step products"):
//  - quiet machine: S 8-12% faster; M and TBPTT the same for the RNN and the GRU, 17-24%
//    slower for the LSTM (two cores' caches hold its 1 MB W_hh, one core's does not);
//  - one CPU-bound process beside it: M 8-25x faster. OpenBLAS splits each small product
//    over both cores, and every step then waits for whichever thread the other process
//    holds off its core (LSTM M 438 ms a step against 28 ms quiet; on one thread 55 ms).
constexpr double kMaxFlops = 64e6;

// Products of at least this many flops split their tiles over recur's threads
// (parallel::for_each_tile: helpers that stay awake between a sequence's products, so no
// thread is woken or started per step), where OpenBLAS's threads sleep when idle
// (OMP_WAIT_POLICY=PASSIVE). Where they spin after each whole-sequence product instead, they
// and the helpers take turns on the same cores, and the split gained nothing for the LSTM
// and lost for the RNN. Measured on the RNN suite's M (4-17 MFLOP per product), PASSIVE:
// 1.26-1.34x faster training steps (docs/performance.md); S's products (below 0.1 MFLOP)
// would pay more to share than they take.
constexpr double kSplitFlops = 1e6;

// Rows over all runs from which B laid out pays where OpenBLAS reads it in place (worth_laying_out).
constexpr std::int64_t kLaidOutRows = 16;

}  // namespace

void set_step_gemm(StepGemm which) { choice() = which; }
void detail::set_chunk_rows(std::int64_t rows) { chunk_rows_for_tests = rows; }
StepGemm step_gemm() { return choice(); }
void set_step_split(StepSplit which) { split_choice = which; }
StepSplit step_split() { return split_choice; }
bool shares_step_work() {
  const StepSplit split = step_split();
  return split != StepSplit::never && (split == StepSplit::always || detail::blas_threads_sleep_when_idle());
}
bool step_work_backs_off() { return step_split() != StepSplit::always; }
std::int64_t step_work_tiles(std::int64_t elements, std::int64_t parts) {
  constexpr std::int64_t kSharedFrom = 8192;
  if (parts < 2 || elements < kSharedFrom || !shares_step_work()) return 1;
  return std::min<std::int64_t>({parts, std::int64_t{std::max(1, num_threads())}, std::int64_t{parallel::tile_team_cpus()}});
}

bool onednn_built_in() { return detail::onednn_built_in(); }

bool libxsmm_built_in() {
#ifdef RECUR_HAVE_LIBXSMM
  return true;
#else
  return false;
#endif
}

// The JIT kernels of a product, seen column-major (libxsmm's order): C^T [n, m] =
// B^T [n, k] A^T [k, m]. A tile is `width` rows of C^T (columns of C), the last one may be
// shorter; a tile's panel of op(B) (pack_panels), row-major [k, width], is column-major
// [width, k] with leading size width. A long inner size runs in chunks of `chunk` (the last
// one may be shorter), each chunk's kernel adding to what the ones before made (beta 1).
template <class T>
struct RepeatedGemm<T>::Kernels {
#ifdef RECUR_HAVE_LIBXSMM
  using Fn = std::conditional_t<std::is_same_v<T, float>, libxsmm_smmfunction, libxsmm_dmmfunction>;
  // A tile's kernels by chunk: the first (the product's beta), those between, the last of
  // several (both beta 1; the last one's inner size may be shorter).
  struct Chunked {
    Fn first = nullptr, middle = nullptr, last = nullptr;
    Fn of(std::int64_t q, std::int64_t chunks) const { return q == 0 ? first : q + 1 == chunks ? last : middle; }
  };
  Chunked whole, narrow;  // whole tiles', the shorter last tile's
  std::int64_t width = 0, tiles = 0, last_width = 0, chunk = 0, chunks = 1;
  bool clears_upper_halves = false;  // the kernels use AVX registers (clear_upper_halves after them)
#endif
};

namespace {
#ifdef RECUR_HAVE_LIBXSMM
void init_libxsmm() {
  static std::once_flag once;
  std::call_once(once, [] { libxsmm_init(); });
}

// Columns of C per kernel call: four of the vector registers of libxsmm's target (the CPU's,
// or LIBXSMM_TARGET's). Measured, float, tiles shared on 2 threads: on AVX-512 (Zen 5) 64
// was the fastest; on an AVX2 EPYC (Zen 3) 32 made [32, 256] x [256, 1024] 1.17x faster than
// 64, its backward [32, 1024] x [1024, 256] 1.29x and [32, 256] x [256, 256] 1.2-1.3x.
template <class T>
std::int64_t tile_width() {
  init_libxsmm();
  const std::int64_t vector_bytes = libxsmm_get_target_archid() >= LIBXSMM_X86_AVX512 ? 64 : 32;
  return 4 * vector_bytes / static_cast<std::int64_t>(sizeof(T));
}

// libxsmm's JIT kernels return with the upper halves of the AVX registers in use (no
// vzeroupper). The code after them is compiled for SSE, and on Intel CPUs each SSE
// instruction then waits on those halves. Measured on a Xeon (Emerald Rapids, AVX-512), a
// training step at S (one row per step) without this and with it: a captured LSTM cell
// 0.62-0.66 ms and 0.50-0.55, nn::RNN 0.096-0.101 and 0.057-0.064, nn::LSTM 0.258-0.265 and
// 0.191-0.194.
// Only for kernels made for AVX or later (the instruction does not exist before).
[[gnu::target("avx")]] void clear_upper_halves() { __builtin_ia32_vzeroupper(); }
bool kernels_use_avx() {
  init_libxsmm();
  return libxsmm_get_target_archid() >= LIBXSMM_X86_AVX;
}

template <class T>
auto dispatch(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t lda, std::int64_t ldb, std::int64_t ldc,
              T beta) {
  init_libxsmm();
  const libxsmm_blasint mm = m, nn = n, kk = k, la = lda, lb = ldb, lc = ldc;
  const T alpha = 1;
  if constexpr (std::is_same_v<T, float>) return libxsmm_smmdispatch(mm, nn, kk, &la, &lb, &lc, &alpha, &beta, nullptr, nullptr);
  else return libxsmm_dmmdispatch(mm, nn, kk, &la, &lb, &lc, &alpha, &beta, nullptr, nullptr);
}

// The inner size of a chunk: a tile's panel of op(B) for a chunk, [chunk, width], at most a
// quarter of the L2 cache the system reports (a core's on the CPUs measured; where several
// cores share one, chunks come out larger than their share), so that it stays there while
// the kernel reads it again for each few rows of A. libxsmm's kernel goes through the whole
// inner size for each block of rows: a panel of [4096, 32] floats (512 KB, an LSTM's dh =
// dgates W_hh at L, H 1024) came from L3 each time. Measured on an AVX2 EPYC (Zen 3, 512 KB
// of L2 a core), [64, 4096] x [4096, 1024] shared on two threads, best of 20 per run, six
// alternating runs: 104-125 GFLOP/s in one chunk, 125-138 in chunks of 128 KB (111-136 in
// chunks of 64 KB); the forward [64, 1024] x [1024, 4096], whose panels are 128 KB, ran at
// 139. Where the system does not say (sysconf), or says less than 64 KB, 128 KB.
std::int64_t panel_bytes() {
  static const std::int64_t bytes = [] {
#ifdef _SC_LEVEL2_CACHE_SIZE
    const long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
#else
    const long l2 = 0;
#endif
    return l2 >= 64 * 1024 ? static_cast<std::int64_t>(l2) / 4 : std::int64_t{128 * 1024};
  }();
  return bytes;
}
template <class T>
std::int64_t chunk_of(std::int64_t k, std::int64_t width) {
  const std::int64_t set = chunk_rows_for_tests.load(std::memory_order_relaxed);
  const std::int64_t most =
      set > 0 ? set : std::max<std::int64_t>(1, panel_bytes() / (width * static_cast<std::int64_t>(sizeof(T))));
  const std::int64_t chunks = (k + most - 1) / most;
  return (k + chunks - 1) / chunks;  // chunks of nearly one size
}
#endif
}  // namespace

namespace {
double flops_of(std::int64_t m, std::int64_t n, std::int64_t k) {
  return 2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}
// Whether a product of `flops` shares its tiles, if it runs on libxsmm.
bool shares_tiles(double flops) { return flops >= kSplitFlops && shares_step_work(); }
// Whether a product of `flops` runs on libxsmm, if libxsmm makes a kernel for it.
bool on_libxsmm(double flops) {
  const StepGemm how = step_gemm();
  return (how == StepGemm::automatic || how == StepGemm::libxsmm) && flops <= kMaxFlops;
}
}  // namespace

template <class T>
bool RepeatedGemm<T>::libxsmm_tiles_of_shared_size(std::int64_t m, std::int64_t n, std::int64_t k) {
  const double flops = flops_of(m, n, k);
  return libxsmm_built_in() && m > 0 && n > 0 && k > 0 && on_libxsmm(flops) && flops >= kSplitFlops;
}

// A product run once gains nothing from B laid out for it: OpenBLAS lays out what it needs
// for that one product itself (nn::LSTM on one step of batch 1 at H 256 spent ~40% of its
// time laying W_hh out, perf). From two runs on, B laid out once pays where OpenBLAS lays
// it out again at every product, as its AVX2 kernels do (Haswell's, batch 1, H 256, 3
// steps: 0.24 ms a training step against 0.80). Its AVX-512 kernel sets read B in place
// for products up to 10^6 m n k (their small-matrix kernels), and up to half that they beat
// B laid out below 16 rows in all (batch 1, H 256, 3 steps: nn::LSTM 0.19-0.23 ms against
// 0.41-0.42 laid out; a captured LSTM cell, 8 steps: 0.69-0.76 against 1.02-1.04); nn::GRU
// at H 512 (m n k 786k), 4 steps, took 2.3-2.6 ms on them against 1.8-1.9 laid out.
template <class T>
bool RepeatedGemm<T>::worth_laying_out(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t runs) {
  return detail::worth_laying_out(m, n, k, runs, detail::is_avx512_core(openblas_get_corename()));
}
bool detail::worth_laying_out(std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t runs,
                              bool openblas_has_small_kernels) {
  if (m <= 0 || runs < 2) return false;
  const bool read_in_place = openblas_has_small_kernels && flops_of(m, n, k) <= 1e6;
  return !read_in_place || runs > (kLaidOutRows - 1) / m;  // m runs >= kLaidOutRows, without overflow
}

template <class T>
RepeatedGemm<T>::RepeatedGemm(std::int64_t m, std::int64_t n, std::int64_t k, const T* b, std::int64_t ldb,
                              bool b_transposed, std::int64_t lda, std::int64_t ldc, T beta, std::int64_t runs)
    : m_(m), n_(n), k_(k), ldb_(ldb), lda_(lda), ldc_(ldc), b_(b), b_transposed_(b_transposed), beta_(beta) {
  if (!worth_laying_out(m, n, k, runs)) return;  // OpenBLAS
  const StepGemm how = step_gemm();
  const double flops = flops_of(m, n, k);
  const bool small = flops <= kMaxFlops;
  split_ = shares_tiles(flops);
  split_always_ = !step_work_backs_off();
  if (on_libxsmm(flops) && use_libxsmm()) return;
  if constexpr (std::is_same_v<T, float>) {
    const bool chosen = how == StepGemm::automatic && !small && detail::blas_runs_on_openmp();
    // Larger products by choice: libxsmm's kernels on panels laid out once, where their tiles
    // are shared over recur's threads. Measured at L, training steps against the products
    // on OpenBLAS (AVX2 EPYC, Zen 3, three alternating rounds): RNN 209-225 against 242-259
    // ms, LSTM 928-976 against 1033-1059, GRU 696-748 against 748-813; against oneDNN's
    // matmul with B in its blocked layout (AVX-512 Xeon, Emerald Rapids, four alternating
    // pairs): RNN 109-137 against 116-144, LSTM 434-536 against 457-519, GRU 322-353 against
    // 334-393, and its step products alone 95-107 ms against 100-179 (oneDNN's OpenMP team
    // varied more).
    if (chosen && split_ && use_libxsmm()) return;
    // Else oneDNN, by choice only where it keeps B in its own layout: otherwise it packs B at
    // every step as OpenBLAS does (and ran slower than OpenBLAS, on AVX2). Else OpenBLAS.
    if (how == StepGemm::onednn || chosen)
      onednn_ = detail::OnednnMatmul::make(m, n, k, b, ldb, b_transposed, lda, ldc, beta, chosen);
  }
}

// libxsmm's kernels for the product, B laid out once in panels (below); false (OpenBLAS)
// where libxsmm is not built in or makes no kernel for the shape.
template <class T>
bool RepeatedGemm<T>::use_libxsmm() {
#ifdef RECUR_HAVE_LIBXSMM
  if (m_ <= 0 || n_ <= 0 || k_ <= 0) return false;
  const std::int64_t m = m_, n = n_, k = k_;
  auto kernels = std::make_unique<Kernels>();
  const std::int64_t w = kernels->width = tile_width<T>();
  kernels->clears_upper_halves = kernels_use_avx();
  kernels->tiles = n / w;
  kernels->last_width = n % w;
  const std::int64_t chunk = kernels->chunk = chunk_of<T>(k, w);
  const std::int64_t chunks = kernels->chunks = (k + chunk - 1) / chunk;
  const std::int64_t last_chunk = k - (chunks - 1) * chunk;
  // The kernels operator() calls for tiles `width` wide: false where libxsmm makes one of them not.
  auto make = [&](typename Kernels::Chunked& kn, std::int64_t width) {
    kn.first = dispatch<T>(width, m, chunk, width, lda_, ldc_, beta_);
    if (chunks > 2) kn.middle = dispatch<T>(width, m, chunk, width, lda_, ldc_, T(1));
    if (chunks > 1) kn.last = dispatch<T>(width, m, last_chunk, width, lda_, ldc_, T(1));
    return kn.first && (chunks < 3 || kn.middle) && (chunks < 2 || kn.last);
  };
  if (kernels->tiles > 0 && !make(kernels->whole, w)) return false;
  if (kernels->last_width > 0 && !make(kernels->narrow, kernels->last_width)) return false;
  pack_panels(w);
  kernels_ = std::move(kernels);
  return true;
#else
  return false;
#endif
}

// Tile t's columns of op(B), [k, width], stored contiguous at t tile k, once for the
// sequence. Read in place, a tile's rows lie ldb apart, and where that is a multiple of 4 KB
// (B [256, 1024]: an LSTM's W_hh^T at H 256) they all fall in the same few sets of the L1
// cache: measured on an AVX2 EPYC (Zen 3), one thread, [32, 256] x [256, 1024]: 26 GFLOP/s
// in place against 59 with ldb 1000.
template <class T>
void RepeatedGemm<T>::pack_panels(std::int64_t tile) {
  // Every element is written below: no zeroing pass over a weight-sized buffer per loop.
  b_panels_ = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(k_ * n_));
  for (std::int64_t first = 0; first < n_; first += tile) {
    const std::int64_t width = std::min(tile, n_ - first);
    T* panel = b_panels_.get() + first * k_;
    if (b_transposed_) {  // columns [first, first + width) of op(B) are rows of the stored [n, k]
      transpose(width, k_, b_ + first * ldb_, ldb_, panel, width);
    } else {
      for (std::int64_t q = 0; q < k_; ++q) std::copy_n(b_ + q * ldb_ + first, width, panel + q * width);
    }
  }
}

template <class T>
RepeatedGemm<T>::~RepeatedGemm() = default;

template <class T>
std::int64_t RepeatedGemm<T>::chunks() const {
#ifdef RECUR_HAVE_LIBXSMM
  if (kernels_) return kernels_->chunks;
#endif
  return 1;
}

template <class T>
const char* RepeatedGemm<T>::backend() const {
  return kernels_ ? "libxsmm" : onednn_ ? "onednn" : "openblas";
}

template <class T>
void RepeatedGemm<T>::operator()(const T* a, T* c) const {
#ifdef RECUR_HAVE_LIBXSMM
  if (kernels_) {
    const Kernels& kn = *kernels_;
    // Tile t: columns [t width, (t + 1) width) of C, the last one shorter, from its panel,
    // chunk by chunk of the inner size.
    auto tile = [&](std::int64_t t) {
      const bool narrow = t == kn.tiles;
      const auto& kernels = narrow ? kn.narrow : kn.whole;
      const std::int64_t width = narrow ? kn.last_width : kn.width;
      const T* panel = b_panels_.get() + t * kn.width * k_;
      for (std::int64_t q = 0; q < kn.chunks; ++q)
        kernels.of(q, kn.chunks)(panel + q * kn.chunk * width, a + q * kn.chunk, c + t * kn.width);
      if (kn.clears_upper_halves) clear_upper_halves();  // on the thread that ran the tile
    };
    const std::int64_t tiles = kn.tiles + (kn.last_width > 0 ? 1 : 0);
    if (split_) parallel::for_each_tile(tiles, num_threads(), tile, !split_always_);
    else for (std::int64_t t = 0; t < tiles; ++t) tile(t);
    return;
  }
#endif
  if constexpr (std::is_same_v<T, float>) {
    // oneDNN's OpenMP team runs this product on every core: helpers spinning after a step's
    // shared elementwise work would take a core from it.
    if (onednn_) parallel::detail::park_helpers();
    if (onednn_ && onednn_->run(a, c)) return;
  }
  gemm(false, b_transposed_, m_, n_, k_, T(1), a, lda_, b_, ldb_, beta_, c, ldc_);
}

template class RepeatedGemm<float>;
template class RepeatedGemm<double>;

}  // namespace recur::blas
