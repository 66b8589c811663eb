// The per-step recurrent products (core/repeated_gemm.hpp): libxsmm's kernels and oneDNN's
// matmul against OpenBLAS's gemm and a plain loop, on every form the fused layers use, and
// the layers themselves with each backend. Where recur was built without libxsmm or oneDNN,
// or this CPU gets no libxsmm kernel, that side is skipped and says so.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <limits>
#include <string>
#include <vector>

#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/blas_narrow_detail.hpp>
#include <recur/core/blas_threads_detail.hpp>
#include <recur/core/onednn_matmul_detail.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/core/tile_team.hpp>
#include <recur/recur.hpp>

#include "step_gemm_scope.hpp"
#include "values.hpp"

namespace recur {
namespace {

using blas::RepeatedGemm;
using blas::StepGemm;

using testing::target_runs_here;
using testing::UseStepGemm;

template <class T>
std::vector<T> random_values(std::size_t n, unsigned seed) {
  std::vector<T> v(n);
  std::uint64_t s = seed;
  for (T& x : v) {  // a small LCG: the same numbers on every machine
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    x = static_cast<T>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

struct Shape3 {
  std::int64_t m, n, k;
};

// The row strides of expect_product_right's A, B and C: wider than the rows.
struct Strides {
  std::int64_t lda, ldb, ldc;
};
Strides strides_of(Shape3 s, bool transposed) { return {s.k + 3, (transposed ? s.k : s.n) + 2, s.n + 5}; }

// C = A op(B) + beta C0 with strides wider than the rows: by the product, and by a plain loop.
// `expect`: the backend the product must run on ("libxsmm": skipped where libxsmm made no
// kernel for the shape, unless `may_skip` is false); `chunks`, if given, how many chunks of k it must run in.
template <class T>
void expect_product_right(StepGemm which, Shape3 s, bool transposed, T beta, const std::string& expect,
                          bool may_skip = true, std::int64_t chunks = 0) {
  const UseStepGemm use(which);
  const auto [lda, ldb, ldc] = strides_of(s, transposed);
  const std::vector<T> a = random_values<T>(static_cast<std::size_t>(s.m * lda), 1);
  const std::vector<T> b = random_values<T>(static_cast<std::size_t>((transposed ? s.n : s.k) * ldb), 2);
  std::vector<T> c = random_values<T>(static_cast<std::size_t>(s.m * ldc), 3), want = c;
  const RepeatedGemm<T> product(s.m, s.n, s.k, b.data(), ldb, transposed, lda, ldc, beta);
  if (may_skip && expect == "libxsmm" && std::string(product.backend()) != "libxsmm")
    GTEST_SKIP() << "libxsmm made no kernel for this shape on this CPU";
  ASSERT_EQ(product.backend(), expect);
  if (chunks > 0) {
    ASSERT_EQ(product.chunks(), chunks) << "m " << s.m << " n " << s.n << " k " << s.k;
  }
  for (int round = 0; round < 2; ++round) {  // the same kernels again, on a new A
    product(a.data() + round, c.data());
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < s.n; ++j) {
        double sum = 0;
        for (std::int64_t q = 0; q < s.k; ++q)
          sum += double(a[i * lda + q + round]) * double(transposed ? b[j * ldb + q] : b[q * ldb + j]);
        T& w = want[i * ldc + j];
        w = static_cast<T>(sum + double(beta) * double(w));
      }
    // Rounding grows with the length of the sums: k terms of at most 1 in size.
    const double tolerance = std::numeric_limits<T>::epsilon() * double(s.k + 16);
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < ldc; ++j) {
        const T got = c[i * ldc + j], expected = want[i * ldc + j];
        ASSERT_LE(std::abs(double(got) - double(expected)), tolerance * (1 + std::abs(double(expected))))
            << "m " << s.m << " n " << s.n << " k " << s.k << (transposed ? " B^T" : " B") << " beta " << beta
            << " at " << i << ", " << j << (j >= s.n ? " (past the row: must not change)" : "");
      }
  }
}

// Small products, every tile case: fewer columns than a tile, whole tiles, tiles and a rest.
const std::vector<Shape3> kSmall = {{1, 32, 16}, {1, 128, 32}, {3, 130, 7}, {2, 64, 64}, {1, 5, 3}};

TEST(RepeatedGemm, LibxsmmKernelsEqualAPlainLoop) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  for (const Shape3& s : kSmall)
    for (bool transposed : {false, true}) {
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 0.f, "libxsmm");
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 1.f, "libxsmm");
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 0.0, "libxsmm");
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 1.0, "libxsmm");
    }
}

// A long inner size runs in chunks, each adding to what the ones before made. With chunks of
// at most 16 rows (set for the test, so on every CPU alike): two, three and four chunks, the
// last one shorter or not, on whole tiles, a shorter last tile, and a single narrow tile.
TEST(RepeatedGemm, LongInnerSizesRunInChunksThatEqualAPlainLoop) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  const testing::UseChunkRows rows(16);
  struct Case {
    Shape3 shape;
    std::int64_t chunks;
  };
  const std::vector<Case> cases = {{{3, 70, 30}, 2}, {{2, 130, 48}, 3}, {{1, 5, 50}, 4}, {{2, 64, 16}, 1}};
  for (const auto& [s, chunks] : cases)
    for (bool transposed : {false, true}) {
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 0.f, "libxsmm", true, chunks);
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 1.f, "libxsmm", true, chunks);
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 0.0, "libxsmm", true, chunks);
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 1.0, "libxsmm", true, chunks);
    }
}

// Without the test's setting: a tile's panel of op(B) over a quarter of the L2 the system
// reports runs in chunks (an LSTM's dh = dgates W_hh at L, k 4096, on the AVX2 EPYC's 512 KB
// L2 and 32-float tiles: four); a short inner size in one.
TEST(RepeatedGemm, ALongInnerSizeRunsInChunksByDefault) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  const UseStepGemm use(StepGemm::libxsmm);
  const std::vector<float> w = random_values<float>(std::size_t{64} * 65536, 1);
  const RepeatedGemm<float> long_inner(1, 64, 65536, w.data(), 64, false, 65536, 64, 0.f);
  if (std::string(long_inner.backend()) != "libxsmm") GTEST_SKIP() << "libxsmm made no kernel for this shape";
  EXPECT_GT(long_inner.chunks(), 1) << "a panel of 65536 rows (at least 8 MB) in one chunk";
  expect_product_right<float>(StepGemm::libxsmm, {2, 40, 5000}, false, 1.f, "libxsmm", true,
                              RepeatedGemm<float>(2, 40, 5000, w.data(), 40, false, 5000, 40, 1.f).chunks());
  EXPECT_EQ(RepeatedGemm<float>(1, 256, 64, w.data(), 256, false, 64, 256, 0.f).chunks(), 1) << "k 64";
}

TEST(RepeatedGemm, OpenblasEqualsAPlainLoop) {
  for (const Shape3& s : kSmall)
    for (bool transposed : {false, true}) {
      expect_product_right<float>(StepGemm::openblas, s, transposed, 1.f, "openblas");
      expect_product_right<double>(StepGemm::openblas, s, transposed, 0.0, "openblas");
    }
}

// A product run once, or too few rows in all where OpenBLAS reads B in place (its AVX-512
// kernel sets, small products), does not pay for laying B out: it runs on OpenBLAS, whichever
// backend is chosen, with OpenBLAS's bits. Above that it runs on the chosen backend (where
// built in and it makes a kernel for the shape).
TEST(RepeatedGemm, AProductRunTooFewTimesRunsOnOpenblas) {
  // The rule, with and without OpenBLAS's small-matrix kernels (whichever this machine runs).
  for (const bool small_kernels : {false, true}) {
    auto pays = [&](std::int64_t m, std::int64_t n, std::int64_t k, std::int64_t runs) {
      return blas::detail::worth_laying_out(m, n, k, runs, small_kernels);
    };
    const std::string on = small_kernels ? "reading B in place" : "packing B at every product";
    for (const std::int64_t m : {1, 4, 16, 64}) {
      EXPECT_FALSE(pays(m, 1024, 256, 1)) << m << " rows, one run, " << on;
      EXPECT_FALSE(pays(m, 1024, 256, 0)) << m << " rows, no run, " << on;
    }
    EXPECT_FALSE(pays(0, 1024, 256, 100)) << on;
    // Larger products (m n k above 5 x 10^5): from two runs on.
    EXPECT_TRUE(pays(1, 2048, 512, 2)) << on;
    EXPECT_TRUE(pays(1, 1536, 512, 2)) << on;
    EXPECT_TRUE(pays(2, 1024, 1024, std::numeric_limits<std::int64_t>::max())) << on;
    // Small ones (1 x 1024 x 256, 3 x 130 x 7): from 16 rows in all where OpenBLAS reads B in place.
    EXPECT_EQ(pays(1, 1024, 256, 15), !small_kernels) << on;
    EXPECT_TRUE(pays(1, 1024, 256, 16)) << on;
    EXPECT_EQ(pays(3, 130, 7, 5), !small_kernels) << on;
    EXPECT_TRUE(pays(3, 130, 7, 6)) << on;
    EXPECT_EQ(pays(3, 130, 7, 2), !small_kernels) << on;
    EXPECT_EQ(pays(5, 130, 7, 3), !small_kernels) << "15 rows, " << on;
    EXPECT_TRUE(pays(16, 130, 7, 2)) << "16 rows, " << on;
    EXPECT_TRUE(pays(1, 130, 7, std::numeric_limits<std::int64_t>::max())) << on;
  }
  // This machine's side: the kernel set OpenBLAS runs now.
  const bool avx512_core = blas::detail::is_avx512_core(recur::blas_info().core);
  std::cout << "OpenBLAS runs " << recur::blas_info().core << ": " << (avx512_core ? "" : "no ")
            << "small products read B in place\n";
  EXPECT_EQ(RepeatedGemm<float>::worth_laying_out(3, 130, 7, 5), !avx512_core);
  const Shape3 s{3, 130, 7};
  const auto [lda, ldb, ldc] = strides_of(s, true);
  const std::vector<float> a = random_values<float>(static_cast<std::size_t>(s.m * lda), 1);
  const std::vector<float> b = random_values<float>(static_cast<std::size_t>(s.n * ldb), 2);
  const std::vector<float> c0 = random_values<float>(static_cast<std::size_t>(s.m * ldc), 3);
  std::vector<float> want = c0;
  blas::gemm(false, true, s.m, s.n, s.k, 1.f, a.data(), lda, b.data(), ldb, 1.f, want.data(), ldc);
  for (StepGemm which : {StepGemm::automatic, StepGemm::libxsmm, StepGemm::onednn}) {
    const UseStepGemm use(which);
    const RepeatedGemm<float> few(s.m, s.n, s.k, b.data(), ldb, true, lda, ldc, 1.f, 1);
    EXPECT_STREQ(few.backend(), "openblas") << static_cast<int>(which);
    std::vector<float> c = c0;
    few(a.data(), c.data());
    EXPECT_EQ(c, want) << static_cast<int>(which);
  }
  // Enough runs: the backend the product gets when its runs are not said (many).
  for (StepGemm which : {StepGemm::libxsmm, StepGemm::onednn}) {
    const UseStepGemm use(which);
    const std::string many = RepeatedGemm<float>(s.m, s.n, s.k, b.data(), ldb, true, lda, ldc, 1.f).backend();
    EXPECT_EQ(RepeatedGemm<float>(s.m, s.n, s.k, b.data(), ldb, true, lda, ldc, 1.f, 6).backend(), many);
    EXPECT_EQ(RepeatedGemm<float>(s.m, s.n, s.k, b.data(), ldb, true, lda, ldc, 1.f, 5).backend(),
              avx512_core ? std::string("openblas") : many);
  }
}

// With libxsmm chosen, large products keep OpenBLAS, whose threads pay there (more than 64
// MFLOP: 2 m n k). (Under `auto`, where oneDNN declines, large float ones take libxsmm: below.)
TEST(RepeatedGemm, LargeProductsStayOnOpenblas) {
  SKIP_UNLESS_TARGET_RUNS_HERE();
  expect_product_right<double>(StepGemm::libxsmm, {1, 4096, 8200}, true, 1.0, "openblas");
}

// The M configuration's products (B32 H256: 17 MFLOP) run on libxsmm, by default too.
TEST(RepeatedGemm, MediumProductsRunOnLibxsmm) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  expect_product_right<float>(StepGemm::automatic, {32, 1024, 256}, true, 1.f, "libxsmm");
  expect_product_right<double>(StepGemm::libxsmm, {32, 256, 1024}, false, 1.0, "libxsmm");
}

// Whether libxsmm runs an M-sized product (B32 H256, 17 MFLOP) here: built in, with a kernel
// for the LIBXSMM_TARGET this test runs under.
bool libxsmm_runs_m_products() {
  if (!blas::libxsmm_built_in() || !target_runs_here()) return false;
  const UseStepGemm use(StepGemm::libxsmm);
  const std::vector<float> w = random_values<float>(1024 * 256, 1);
  return std::string(RepeatedGemm<float>(32, 1024, 256, w.data(), 256, true, 256, 1024, 1.f).backend()) == "libxsmm";
}
#define SKIP_UNLESS_LIBXSMM_RUNS_M_PRODUCTS() \
  if (!libxsmm_runs_m_products()) GTEST_SKIP() << "libxsmm runs no M-sized product here (not built in, or no kernel)"

// Products of 1 MFLOP and more share their tiles over threads where asked (StepSplit). A tile
// is the same kernel on the same operands whichever thread runs it, so the bits equal one
// thread's. Shapes with a shorter last tile, and with a single tile (run alone).
template <class T>
void expect_shared_tiles_bits_equal(Shape3 s, bool transposed, T beta) {
  const auto [lda, ldb, ldc] = strides_of(s, transposed);
  const std::vector<T> a = random_values<T>(static_cast<std::size_t>(s.m * lda + 8), 1);
  const std::vector<T> b = random_values<T>(static_cast<std::size_t>((transposed ? s.n : s.k) * ldb), 2);
  const std::vector<T> c0 = random_values<T>(static_cast<std::size_t>(s.m * ldc), 3);
  auto run = [&](blas::StepSplit split, int threads) {
    const testing::UseStepSplit use(split, threads);
    std::vector<T> c = c0;
    const RepeatedGemm<T> product(s.m, s.n, s.k, b.data(), ldb, transposed, lda, ldc, beta);
    EXPECT_STREQ(product.backend(), "libxsmm");
    EXPECT_EQ(product.splits(), split == blas::StepSplit::always);
    // Rounds on new A: a helper woken by the first finds the next ones awake.
    for (int round = 0; round < 8; ++round) product(a.data() + round, c.data());
    return c;
  };
  const std::vector<T> alone = run(blas::StepSplit::never, 1);
  for (int threads : {2, 3}) {
    // A helper claims each product's first tile, the caller the next free ones: tiles of
    // both threads in every product of several tiles (one tile is always the caller's).
    const testing::HelpersClaimFirst helpers_first;
    const std::uint64_t helped = parallel::tile_team_helper_tiles();
    const std::vector<T> shared = run(blas::StepSplit::always, threads);
    ASSERT_EQ(std::memcmp(shared.data(), alone.data(), alone.size() * sizeof(T)), 0)
        << "m " << s.m << " n " << s.n << " k " << s.k << (transposed ? " B^T" : " B") << " beta " << beta << " on "
        << threads << " threads";
    if (s.n > 64) {  // tiles of 64 columns: more than one
      EXPECT_GT(parallel::tile_team_helper_tiles(), helped) << "no helper ran a tile";
    }
  }
}

TEST(RepeatedGemm, TilesSharedOverThreadsGiveOneThreadsBits) {
  SKIP_UNLESS_LIBXSMM_RUNS_M_PRODUCTS();
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const UseStepGemm use(StepGemm::libxsmm);
  for (const Shape3& s : std::vector<Shape3>{{32, 1024, 256}, {8, 200, 400}, {16, 64, 1024}})
    for (bool transposed : {false, true}) {
      expect_shared_tiles_bits_equal<float>(s, transposed, 0.f);
      expect_shared_tiles_bits_equal<float>(s, transposed, 1.f);
      expect_shared_tiles_bits_equal<double>(s, transposed, 1.0);
    }
  const testing::UseChunkRows rows(128);  // 400 rows in four chunks, shared too
  expect_shared_tiles_bits_equal<float>({8, 200, 400}, true, 1.f);
  expect_shared_tiles_bits_equal<double>({8, 200, 400}, false, 0.0);
  EXPECT_GE(parallel::tile_team_helpers(), 1);
}

// By default, products share their tiles only where OpenBLAS's threads sleep when idle
// (OMP_WAIT_POLICY=PASSIVE): otherwise both sets of threads spin on the same cores. Products
// under 1 MFLOP never share.
TEST(RepeatedGemm, TilesAreSharedByDefaultWhereOpenblasThreadsSleep) {
  SKIP_UNLESS_LIBXSMM_RUNS_M_PRODUCTS();
  const UseStepGemm use(StepGemm::automatic);
  const testing::UseStepSplit split(blas::StepSplit::automatic, 2);
  const std::vector<float> w = random_values<float>(1024 * 256, 1);
  EXPECT_EQ(RepeatedGemm<float>(32, 1024, 256, w.data(), 256, true, 256, 1024, 1.f).splits(),
            blas::detail::blas_threads_sleep_when_idle());
  EXPECT_FALSE(RepeatedGemm<float>(1, 128, 32, w.data(), 32, true, 32, 128, 1.f).splits());
}

TEST(RepeatedGemm, OnednnEqualsAPlainLoop) {
  if (!blas::onednn_built_in()) GTEST_SKIP() << "recur was built without oneDNN";
  for (const Shape3& s : kSmall)
    for (bool transposed : {false, true}) {
      expect_product_right<float>(StepGemm::onednn, s, transposed, 0.f, "onednn");
      expect_product_right<float>(StepGemm::onednn, s, transposed, 1.f, "onednn");
      expect_product_right<double>(StepGemm::onednn, s, transposed, 1.0, "openblas");  // oneDNN has no f64 matmul
    }
}

// A product on oneDNN runs on its OpenMP team, on every core: before it, the tile team's
// helpers that spin for the next shared work (a layer's cells, between its products) are
// parked and sleep at once (here they would spin for 10 s).
TEST(RepeatedGemm, AProductOnOnednnParksSpinningHelpers) {
  if (!blas::onednn_built_in()) GTEST_SKIP() << "recur was built without oneDNN";
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const testing::LongHelperSpin long_spin;
  const UseStepGemm use(StepGemm::onednn);
  const std::vector<float> w = random_values<float>(64 * 32, 3), a = random_values<float>(4 * 32, 4);
  std::vector<float> c(4 * 64, 0.f);
  const RepeatedGemm<float> product(4, 64, 32, w.data(), 32, true, 32, 64, 0.f);
  ASSERT_STREQ(product.backend(), "onednn");
  const testing::HelpersClaimFirst helpers_first;  // a helper joins the shared work
  for (int round = 0; round < 2; ++round) {
    // (Without back-off: a helper held off its core in round 0 must not keep round 1 alone.)
    parallel::for_each_tile(8, 2, [](std::int64_t) {}, false);
    ASSERT_FALSE(testing::helpers_asleep_within(std::chrono::milliseconds(200)))
        << "round " << round << ": helpers slept unparked";
    product(a.data(), c.data());
    EXPECT_TRUE(testing::helpers_asleep_within(std::chrono::seconds(5)))
        << "round " << round << ": helpers spin beside oneDNN";
  }
}

// By default a float32 product above libxsmm's limit for small products (72 MFLOP here),
// where OpenBLAS is its OpenMP build (one pool of threads for both), runs on libxsmm where
// per-step products share their tiles and libxsmm makes the kernels; else on oneDNN where it
// keeps the right-hand matrix in a layout of its own (as made directly here); on OpenBLAS
// otherwise.
TEST(RepeatedGemm, LargeFloatProductsRunOnSharedLibxsmmTilesElseOnOnednnWhereItKeepsItsLayout) {
  const Shape3 s{16, 2048, 1100};
  // room for B's rows at the product's strides (below), wider than dense ones
  const std::vector<float> b = random_values<float>(static_cast<std::size_t>((s.n + 2) * (s.k + 2)), 5);
  for (bool transposed : {false, true}) {
    // Whether oneDNN keeps B in its own layout for dense rows, and for the strided rows of the
    // product below (it may not: on some AVX-512 CPUs oneDNN 2.6 blocks B only where A's and C's
    // rows are dense, and reads it plain for wider rows).
    auto keeps_own_layout = [&](Strides d) {
      return blas::detail::OnednnMatmul::make(s.m, s.n, s.k, b.data(), d.ldb, transposed, d.lda, d.ldc, 1.f,
                                              true) != nullptr;
    };
    const bool own_layout = keeps_own_layout({s.k, transposed ? s.k : s.n, s.n});
    // libxsmm's kernels for this shape's tiles, as a narrower product (below its limit) makes them
    const bool kernels = [&] {
      const UseStepGemm use(StepGemm::libxsmm);
      return std::string(RepeatedGemm<float>(s.m, 64, s.k, b.data(), s.k, true, s.k, 64, 1.f).backend()) == "libxsmm";
    }();
    // Tiles shared (as under OMP_WAIT_POLICY=PASSIVE) and not, whatever the environment says.
    for (const blas::StepSplit split : {blas::StepSplit::always, blas::StepSplit::never}) {
      const testing::UseStepSplit use(split, 2);
      const bool libxsmm = blas::detail::blas_runs_on_openmp() && kernels && blas::shares_step_work();
      const bool onednn =
          !libxsmm && blas::detail::blas_runs_on_openmp() && keeps_own_layout(strides_of(s, transposed));
      expect_product_right<float>(StepGemm::automatic, s, transposed, 1.f,
                                  onednn ? "onednn" : libxsmm ? "libxsmm" : "openblas", false);
    }
    // oneDNN 2.6's matmul on an AVX-512 CPU is its brgemm, with the matrix blocked: there the
    // choice does take oneDNN (unless the environment caps oneDNN's instruction set).
    __builtin_cpu_init();
    const bool avx512_core = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
                             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    const bool isa_capped = std::getenv("ONEDNN_MAX_CPU_ISA") || std::getenv("DNNL_MAX_CPU_ISA");
    if (blas::onednn_built_in() && avx512_core && !isa_capped) {
      EXPECT_TRUE(own_layout) << (transposed ? "B^T" : "B");
    }
  }
  expect_product_right<double>(StepGemm::automatic, s, true, 1.0, "openblas");
}

#ifdef RECUR_TEST_OPENMP_OPENBLAS
// The build linked OpenBLAS's OpenMP build (cmake/recurOpenblasOpenmp.cmake): the programs
// load that one, whichever build the system's libopenblas.so.0 points to.
TEST(RepeatedGemm, TheOpenmpBuildOfOpenblasTheBuildFoundIsTheOneLoaded) {
  EXPECT_TRUE(blas::detail::blas_runs_on_openmp());
}
#endif

// One training step of a fused layer on an input of shape `input`: its output, the input's
// gradient and every parameter's.
std::vector<Tensor> train_step(const std::string& cell, const nn::RecurrentOptions& o, const Shape& input) {
  Generator gen(5);
  Tape tape;
  const Var x = tape.variable(uniform(input, -1, 1, gen, o.dtype));
  std::vector<Tensor> values;
  auto finish = [&](const Module& m, const nn::RecurrentOutput& out) {
    const Var loss = sum(out.output * out.output) + sum(out.h_n);
    tape.backward(loss);
    values.push_back(out.output.value());
    values.push_back(x.grad());
    for (const auto& [name, p] : m.named_parameters()) values.push_back(p.grad());
  };
  if (cell == "lstm") {
    const nn::LSTM layer(o, gen);
    finish(layer, layer(x));
  } else if (cell == "gru") {
    const nn::GRU layer(o, gen);
    finish(layer, layer(x));
  } else {
    const nn::RNN layer(o, gen);
    finish(layer, layer(x));
  }
  return values;
}
// The same, two layers in both directions, on one backend.
std::vector<Tensor> train_step(const std::string& cell, StepGemm which, DType dtype) {
  const UseStepGemm use(which);
  nn::RecurrentOptions o{.input_size = 6, .hidden_size = 20, .num_layers = 2, .bidirectional = true};
  o.dtype = dtype;
  return train_step(cell, o, {7, 3, 6});
}

// Every layer's values and gradients on `which` against OpenBLAS's, within `tolerance`
// relative.
void expect_layers_agree(StepGemm which, DType dtype, double tolerance) {
  for (const std::string cell : {"lstm", "gru", "rnn"}) {
    const std::vector<Tensor> a = train_step(cell, which, dtype), b = train_step(cell, StepGemm::openblas, dtype);
    ASSERT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size(); ++i) {
      const std::vector<double> x = testing::values(a[i]), y = testing::values(b[i]);
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t j = 0; j < x.size(); ++j)
        ASSERT_NEAR(x[j], y[j], tolerance * (1 + std::abs(y[j]))) << cell << " value " << i << " element " << j;
    }
  }
}

// The layers at sizes whose products share their tiles (2-8 MFLOP): the same bits with the
// tiles shared over threads as on one thread, values and every gradient.
TEST(RepeatedGemm, FusedLayersGiveOneThreadsBitsWithTilesShared) {
  SKIP_UNLESS_LIBXSMM_RUNS_M_PRODUCTS();
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const UseStepGemm use(StepGemm::libxsmm);
  auto train = [](const std::string& cell, blas::StepSplit split) {
    const testing::UseStepSplit use(split, 2);  // OpenBLAS's whole-sequence products on two threads either way
    return train_step(cell, nn::RecurrentOptions{.input_size = 8, .hidden_size = 256}, {40, 16, 8});
  };
  for (const std::string cell : {"lstm", "gru", "rnn"}) {
    const std::uint32_t jobs = parallel::tile_team_jobs();
    const std::vector<Tensor> alone = train(cell, blas::StepSplit::never);
    EXPECT_EQ(parallel::tile_team_jobs(), jobs) << cell << ": no product may share its tiles";
    const testing::HelpersClaimFirst helpers_first;  // a helper's tiles in every shared product
    const std::uint64_t helped = parallel::tile_team_helper_tiles();
    const std::vector<Tensor> shared = train(cell, blas::StepSplit::always);
    ASSERT_EQ(shared.size(), alone.size());
    for (std::size_t i = 0; i < shared.size(); ++i) {
      ASSERT_EQ(shared[i].nbytes(), alone[i].nbytes());
      ASSERT_EQ(std::memcmp(shared[i].raw_data(), alone[i].raw_data(), alone[i].nbytes()), 0) << cell << " value " << i;
    }
    EXPECT_GT(parallel::tile_team_helper_tiles(), helped) << cell << ": no helper ran a tile";
  }
}

// Where the input product x W_ih^T over every step's rows has a short inner size (here
// 128), blas::gemm runs it in blocks of rows on libxsmm instead of one OpenBLAS gemm
// (core/blas_narrow_detail.hpp): float64, against OpenBLAS, within float64's rounding.
TEST(RepeatedGemm, FusedLayersInputProductInRowBlocksAgreesWithOneGemm) {
  SKIP_UNLESS_LIBXSMM_RUNS_M_PRODUCTS();
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  nn::RecurrentOptions o{.input_size = 128, .hidden_size = 128};
  o.dtype = DType::float64;
  const Shape input{16, 16, 128};  // 256 rows: 4 blocks
  for (const std::string cell : {"lstm", "gru", "rnn"}) {
    const std::int64_t gh = (cell == "lstm" ? 4 : cell == "gru" ? 3 : 1) * o.hidden_size;
    std::vector<Tensor> blocked;
    {
      const UseStepGemm use(StepGemm::libxsmm);
      const testing::UseStepSplit split(blas::StepSplit::always, 2);
      const testing::UseRowBlocks blocks(blas::detail::RowBlocks::always);
      ASSERT_TRUE(blas::detail::runs_in_row_blocks<double>(256, gh, 128, 0.0)) << cell;
      // The same layer on 8 inputs, whose input product OpenBLAS runs: its other products
      // are the same, so the difference in shared products is the 4 blocks (and 4 more for
      // dX = dG W_ih where the gates are as few as the RNN's 128).
      const std::uint32_t routed = cell == "rnn" ? 2 : 1;
      nn::RecurrentOptions narrow = o;
      narrow.input_size = 8;
      std::uint32_t jobs = parallel::tile_team_jobs();
      train_step(cell, narrow, {16, 16, 8});
      const std::uint32_t others = parallel::tile_team_jobs() - jobs;
      jobs = parallel::tile_team_jobs();
      blocked = train_step(cell, o, input);
      EXPECT_EQ(parallel::tile_team_jobs() - jobs, others + 4 * routed) << cell << ": the input product did not run in row blocks";
    }
    const UseStepGemm use(StepGemm::openblas);
    const testing::UseRowBlocks blocks(blas::detail::RowBlocks::always);
    EXPECT_FALSE(blas::detail::runs_in_row_blocks<double>(256, gh, 128, 0.0)) << cell << ": OpenBLAS chosen";
    const std::vector<Tensor> whole = train_step(cell, o, input);
    ASSERT_EQ(blocked.size(), whole.size());
    for (std::size_t i = 0; i < whole.size(); ++i) {
      const std::vector<double> x = testing::values(blocked[i]), y = testing::values(whole[i]);
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t j = 0; j < x.size(); ++j)
        ASSERT_NEAR(x[j], y[j], 1e-12 * (1 + std::abs(y[j]))) << cell << " value " << i << " element " << j;
    }
  }
}

// float64, S-like sizes so that libxsmm runs.
TEST(RepeatedGemm, FusedLayersAgreeOnLibxsmmAndOpenblas) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  expect_layers_agree(StepGemm::libxsmm, DType::float64, 1e-12);
}

// float32 (oneDNN's matmul has no float64): sums in another order, so within float32's
// rounding over the seven steps.
TEST(RepeatedGemm, FusedLayersAgreeOnOnednnAndOpenblas) {
  if (!blas::onednn_built_in()) GTEST_SKIP() << "recur was built without oneDNN";
  {  // the layers' products (B3 H20: 3 x 80 x 20 forward, 3 x 20 x 80 back) do run on oneDNN
    const UseStepGemm use(StepGemm::onednn);
    const std::vector<float> w = random_values<float>(80 * 20, 1);
    EXPECT_STREQ(RepeatedGemm<float>(3, 80, 20, w.data(), 20, true, 20, 80, 1.f, 7).backend(), "onednn");
    EXPECT_STREQ(RepeatedGemm<float>(3, 20, 80, w.data(), 20, false, 80, 20, 1.f, 7).backend(), "onednn");
  }
  expect_layers_agree(StepGemm::onednn, DType::float32, 2e-5);
}

}  // namespace
}  // namespace recur
