#include <recur/core/blas.hpp>

#include <atomic>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <limits>
#include <memory>
#include <string>
#include <string_view>
#include <type_traits>

#include <dlfcn.h>
#include <strings.h>

#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/blas_narrow_detail.hpp>
#include <recur/core/blas_threads_detail.hpp>
#include <recur/core/error.hpp>

#include <recur/core/openblas_cblas_detail.hpp>
#include <recur/core/tile_team.hpp>
#include <recur/core/repeated_gemm.hpp>

namespace recur::blas {
namespace {
// OpenBLAS's best kernels for this CPU before main, so before any product runs (see
// blas_kernel.cpp). Here, beside gemm, so that every program that multiplies links it.
[[maybe_unused]] const bool best_kernel_selected = (detail::select_best_kernel_once(), true);
}  // namespace

bool detail::blas_runs_on_openmp() { return openblas_get_parallel() == OPENBLAS_OPENMP; }

bool detail::blas_threads_sleep_when_idle() {
  static const bool sleep = [] {
    if (!blas_runs_on_openmp()) return false;  // the pthreads build's threads spin after each call
    const char* policy = std::getenv("OMP_WAIT_POLICY");
    return policy && ::strcasecmp(policy, "passive") == 0;
  }();
  return sleep;
}

namespace {

// recur's thread count (0: OpenMP's own, the same on every thread). OpenBLAS's OpenMP build
// (the one recur links where installed: cmake/recurOpenblasOpenmp.cmake) ignores
// OPENBLAS_NUM_THREADS and follows the calling thread's OpenMP count; recur keeps that
// variable as its one thread setting, over OMP_NUM_THREADS, as the pthreads build takes it.
std::atomic<int> thread_setting{0};

int openblas_num_threads_variable() {
  const char* v = std::getenv("OPENBLAS_NUM_THREADS");
  int n = 0;
  if (!v || std::from_chars(v, v + std::strlen(v), n).ec != std::errc() || n < 1) return 0;
  return n;
}

// OpenMP's per-thread count, looked up in the process (libgomp comes with OpenBLAS's OpenMP
// build; recur itself does not link it): null on the pthreads build.
struct OpenmpThreads {
  using Get = int (*)();
  using Set = void (*)(int);
  Get get = nullptr;
  Set set = nullptr;
};
const OpenmpThreads& openmp_threads() {
  static const OpenmpThreads o = [] {
    OpenmpThreads r;
    if (!detail::blas_runs_on_openmp()) return r;
    r.get = reinterpret_cast<OpenmpThreads::Get>(::dlsym(RTLD_DEFAULT, "omp_get_max_threads"));
    r.set = reinterpret_cast<OpenmpThreads::Set>(::dlsym(RTLD_DEFAULT, "omp_set_num_threads"));
    if (!r.get || !r.set) r = OpenmpThreads{};
    return r;
  }();
  return o;
}

void apply_openblas_num_threads() {
  if (!detail::blas_runs_on_openmp()) return;
  if (const int n = openblas_num_threads_variable(); n > 0) {
    thread_setting = n;
    openblas_set_num_threads(n);
  }
}
[[maybe_unused]] const bool thread_count_applied = (apply_openblas_num_threads(), true);

CBLAS_TRANSPOSE flag(bool t) { return t ? CblasTrans : CblasNoTrans; }

// Sizes past blasint's range would wrap around inside BLAS; `shape` says which call's they are.
template <class... Parts>
void check_sizes(std::string_view op, std::initializer_list<std::int64_t> sizes, const Parts&... shape) {
  for (std::int64_t v : sizes)
    if (v > std::numeric_limits<blasint>::max())
      fail<ShapeError>(op, "a dimension of ", v, " exceeds BLAS's integer range (", shape..., ")");
}

// One body for both precisions: cblas_sgemm and cblas_dgemm take the same arguments.
template <class T>
void gemm_as(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T alpha, const T* a, std::int64_t lda,
             const T* b, std::int64_t ldb, T beta, T* c, std::int64_t ldc) {
  check_sizes("gemm", {m, n, k, lda, ldb, ldc}, "m=", m, ", n=", n, ", k=", k);
  detail::match_thread_count();
  const detail::OneThreadForSmallProducts one_thread(m, n, k);
  constexpr auto cblas_gemm = [] {
    if constexpr (std::is_same_v<T, float>) return cblas_sgemm;
    else return cblas_dgemm;
  }();
  const auto run = [&](bool t1, bool t2, std::int64_t rows, std::int64_t cols, const T* x, std::int64_t ldx,
                       const T* y, std::int64_t ldy, T* out, std::int64_t ldo) {
    // OpenBLAS's team runs a product this large on every core: helpers spinning for the
    // next per-step product would take cores from it.
    if (static_cast<double>(rows) * static_cast<double>(cols) * static_cast<double>(k) >= detail::kOneThreadBelow)
      parallel::detail::park_helpers();
    cblas_gemm(CblasRowMajor, flag(t1), flag(t2), static_cast<blasint>(rows), static_cast<blasint>(cols),
               static_cast<blasint>(k), alpha, x, static_cast<blasint>(ldx), y, static_cast<blasint>(ldy), beta, out,
               static_cast<blasint>(ldo));
  };
  if (!ta && alpha == T(1) && detail::runs_in_row_blocks<T>(m, n, k, static_cast<double>(beta))) {
    // (blas_narrow_detail.hpp) Blocks of kRowBlock rows of A on one RepeatedGemm; the rest, fewer, here.
    const std::int64_t blocks = m / detail::kRowBlock, block_rows = detail::kRowBlock;
    const RepeatedGemm<T> block(block_rows, n, k, b, ldb, tb, lda, ldc, T(0), blocks);
    for (std::int64_t i = 0; i < blocks; ++i) block(a + i * block_rows * lda, c + i * block_rows * ldc);
    if (const std::int64_t rest = m - blocks * block_rows; rest > 0)
      run(false, tb, rest, n, a + blocks * block_rows * lda, lda, b, ldb, c + blocks * block_rows * ldc, ldc);
    return;
  }
  if (!detail::runs_transposed(m, n, k, static_cast<double>(beta), ta)) return run(ta, tb, m, n, a, lda, b, ldb, c, ldc);
  // C^T = op(B)^T op(A)^T (blas_narrow_detail.hpp), then C = (C^T)^T.
  const auto scratch = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(n * m));
  run(!tb, !ta, n, m, b, ldb, a, lda, scratch.get(), m);
  transpose(n, m, scratch.get(), m, c, ldc);
}
}  // namespace

namespace {
std::atomic<detail::NarrowTransposed> narrow_transposed{detail::NarrowTransposed::measured};
}

void detail::set_narrow_transposed(NarrowTransposed which) { narrow_transposed = which; }

namespace {
std::atomic<detail::RowBlocks> row_blocks{detail::RowBlocks::automatic};
}

void detail::set_row_blocks(RowBlocks which) { row_blocks = which; }

template <class T>
bool detail::runs_in_row_blocks(std::int64_t m, std::int64_t n, std::int64_t k, double beta) {
  // The shape first: every gemm asks, and most are not such products.
  if (beta != 0 || k > kRowBlocksMaxInner || m < kRowBlocksMinBlocks * kRowBlock) return false;
  const RowBlocks when = row_blocks.load(std::memory_order_relaxed);
  if (when == RowBlocks::never || (when == RowBlocks::automatic && !blas_threads_sleep_when_idle())) return false;
  return RepeatedGemm<T>::libxsmm_tiles_of_shared_size(kRowBlock, n, k);
}
template bool detail::runs_in_row_blocks<float>(std::int64_t, std::int64_t, std::int64_t, double);
template bool detail::runs_in_row_blocks<double>(std::int64_t, std::int64_t, std::int64_t, double);

bool detail::runs_transposed(std::int64_t m, std::int64_t n, std::int64_t k, double beta, bool a_transposed) {
  if (beta != 0 || n > kNarrowColumns || m < kNarrowRowsPerColumn * n) return false;
  const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
  if (work < static_cast<double>(kNarrowMinWork)) return false;
  switch (narrow_transposed.load(std::memory_order_relaxed)) {
    case NarrowTransposed::any: return true;
    case NarrowTransposed::none: return false;
    case NarrowTransposed::measured: break;
  }
  if (detail::is_avx512_core(openblas_get_corename())) return true;  // the kernel set now (the switch may change it)
  return a_transposed && k >= kNarrowMinInnerOtherKernels && work >= static_cast<double>(kNarrowMinWorkOtherKernels);
}

void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, float alpha, const float* a,
          std::int64_t lda, const float* b, std::int64_t ldb, float beta, float* c, std::int64_t ldc) {
  gemm_as(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}
void gemm(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, double alpha, const double* a,
          std::int64_t lda, const double* b, std::int64_t ldb, double beta, double* c, std::int64_t ldc) {
  gemm_as(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

namespace {
template <class T>
void transpose_as(std::int64_t rows, std::int64_t cols, const T* a, std::int64_t lda, T* b, std::int64_t ldb) {
  if (rows <= 0 || cols <= 0) return;
  check_sizes("transpose", {rows, cols, lda, ldb}, "rows=", rows, ", cols=", cols);
  constexpr auto omatcopy = [] {
    if constexpr (std::is_same_v<T, float>) return cblas_somatcopy;
    else return cblas_domatcopy;
  }();
  omatcopy(CblasRowMajor, CblasTrans, static_cast<blasint>(rows), static_cast<blasint>(cols), T(1), a,
           static_cast<blasint>(lda), b, static_cast<blasint>(ldb));
}
}  // namespace

void transpose(std::int64_t rows, std::int64_t cols, const float* a, std::int64_t lda, float* b, std::int64_t ldb) {
  transpose_as(rows, cols, a, lda, b, ldb);
}
void transpose(std::int64_t rows, std::int64_t cols, const double* a, std::int64_t lda, double* b, std::int64_t ldb) {
  transpose_as(rows, cols, a, lda, b, ldb);
}

void set_num_threads(int n) {
  if (detail::blas_runs_on_openmp() && n > 0) thread_setting = n;
  openblas_set_num_threads(n);
}
int num_threads() { return openblas_get_num_threads(); }

namespace detail {
// Every thread that multiplies runs with recur's count: OpenMP's is per thread, and OpenBLAS
// takes the calling thread's (for the whole process) at each call.
void match_thread_count() {
  const int n = thread_setting.load(std::memory_order_relaxed);
  if (n <= 0) return;
  const OpenmpThreads& omp = openmp_threads();
  if (omp.get && omp.get() != n) omp.set(n);
}

OneThreadForSmallProducts::OneThreadForSmallProducts(std::int64_t m, std::int64_t n, std::int64_t k) {
  std::int64_t mn = 0, mnk = 0;
  if (__builtin_mul_overflow(m, n, &mn) || __builtin_mul_overflow(mn, k, &mnk) || mnk >= kOneThreadBelow) return;
  const OpenmpThreads& omp = openmp_threads();
  if (!omp.get || (restore_ = omp.get()) <= 1) return;
  omp.set(1);
}
OneThreadForSmallProducts::~OneThreadForSmallProducts() {
  if (restore_ > 1) openmp_threads().set(restore_);
}
}  // namespace detail

}  // namespace recur::blas
