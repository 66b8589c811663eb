// The products OpenBLAS runs below its speed (core/blas_narrow_detail.hpp). Those with few
// columns: which run transposed, and that both forms equal the definition, with row strides
// wider than the rows, in both precisions, for every pair of transpose flags; beta = 1 keeps
// the direct form and adds to C. Those with a short inner size: in row blocks on libxsmm
// (the rows after the last whole block on OpenBLAS), against the definition too.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <recur/core/blas.hpp>
#include <recur/core/blas_kernel.hpp>
#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/blas_threads_detail.hpp>
#include <recur/core/blas_narrow_detail.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/core/tile_team.hpp>

#include "step_gemm_scope.hpp"

namespace recur {
namespace {

using blas::detail::NarrowTransposed;
using blas::detail::runs_transposed;

TEST(BlasNarrow, OnlyWideEnoughProductsOfFewColumnsRunTransposed) {
  const bool avx512 = blas::detail::is_avx512_core(blas_info().core);
  const std::string on = " on " + blas_info().core;
  EXPECT_EQ(runs_transposed(3200, 64, 1024, 0.0, false), avx512) << "an LSTM's dX at M" << on;
  EXPECT_TRUE(runs_transposed(1024, 64, 3200, 0.0, true)) << "an LSTM's dW_ih at M" << on;
  // Other kernel sets: A transposed, k >= 128 and m n k >= 16M.
  EXPECT_TRUE(runs_transposed(512, 32, 1024, 0.0, true)) << "m n k = 16M" << on;
  EXPECT_EQ(runs_transposed(512, 32, 1023, 0.0, true), avx512) << "a little less" << on;
  EXPECT_EQ(runs_transposed(16384, 64, 64, 0.0, true), avx512) << "k = 64" << on;
  EXPECT_EQ(runs_transposed(16384, 64, 1024, 0.0, false), avx512) << "A plain" << on;
  const testing::UseNarrowTransposed any(NarrowTransposed::any);
  for (const bool ta : {false, true}) {
    EXPECT_TRUE(runs_transposed(3200, 64, 1024, 0.0, ta));
    EXPECT_TRUE(runs_transposed(512, 16, 512, 0.0, ta));    // m n k = 4M: the least work that does
    EXPECT_FALSE(runs_transposed(512, 16, 511, 0.0, ta));   // a little less
    EXPECT_FALSE(runs_transposed(3200, 65, 1024, 0.0, ta)); // too many columns
    EXPECT_FALSE(runs_transposed(511, 64, 4096, 0.0, ta));  // too few rows per column
    EXPECT_FALSE(runs_transposed(3200, 64, 1024, 1.0, ta)); // C is read: beta = 1
  }
  blas::detail::set_narrow_transposed(NarrowTransposed::none);
  EXPECT_FALSE(runs_transposed(3200, 64, 1024, 0.0, false));
  EXPECT_FALSE(runs_transposed(1024, 64, 3200, 0.0, true));
}

// C = alpha op(A) op(B) + beta C (alpha 1/2 unless given) against the definition (in long double), and the padding
// past each row of C untouched.
template <class T>
void expect_product(bool ta, bool tb, std::int64_t m, std::int64_t n, std::int64_t k, T beta, T alpha = T(0.5)) {
  const std::int64_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 5;
  std::vector<T> a(static_cast<std::size_t>((ta ? k : m) * lda)), b(static_cast<std::size_t>((tb ? n : k) * ldb));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(static_cast<int>(i % 23) - 11) / T(8);
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<T>(static_cast<int>(i % 19) - 9) / T(16);
  const T untouched = T(-7.25);
  std::vector<T> c(static_cast<std::size_t>(m * ldc), untouched);
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) c[static_cast<std::size_t>(i * ldc + j)] = static_cast<T>((i + 2 * j) % 7);
  const std::vector<T> before = c;
  blas::gemm(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, c.data(), ldc);
  auto at = [](const std::vector<T>& v, std::int64_t ld, bool t, std::int64_t i, std::int64_t j) {
    return static_cast<long double>(v[static_cast<std::size_t>(t ? j * ld + i : i * ld + j)]);
  };
  const long double tolerance = std::is_same_v<T, float> ? 1e-5L : 1e-13L;
  for (std::int64_t i = 0; i < m; ++i) {
    for (std::int64_t j = 0; j < n; ++j) {
      long double sum = 0, scale = 0;
      for (std::int64_t p = 0; p < k; ++p) {
        sum += at(a, lda, ta, i, p) * at(b, ldb, tb, p, j);
        scale += std::fabs(at(a, lda, ta, i, p) * at(b, ldb, tb, p, j));
      }
      const std::size_t e = static_cast<std::size_t>(i * ldc + j);
      const long double want = alpha * sum + beta * static_cast<long double>(before[e]);
      ASSERT_NEAR(static_cast<long double>(c[e]), want, tolerance * (scale + 1))
          << "C[" << i << ", " << j << "] of " << m << " x " << n << " x " << k << ", ta " << ta << ", tb " << tb
          << ", beta " << beta;
    }
    for (std::int64_t j = n; j < ldc; ++j)
      ASSERT_EQ(c[static_cast<std::size_t>(i * ldc + j)], untouched) << "padding of row " << i;
  }
}

TEST(BlasNarrow, BothFormsEqualTheDefinition) {
  for (const NarrowTransposed which : {NarrowTransposed::any, NarrowTransposed::none}) {
    const testing::UseNarrowTransposed scope(which);
    for (const bool ta : {false, true})
      for (const bool tb : {false, true})
        for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{1024, 16, 256}, {640, 64, 128}, {700, 33, 300}}) {
          SCOPED_TRACE(which == NarrowTransposed::any ? "transposed where the shape allows" : "direct");
          ASSERT_TRUE(runs_transposed(m, n, k, 0.0, ta) == (which == NarrowTransposed::any));
          expect_product<float>(ta, tb, m, n, k, 0.0f);
          expect_product<double>(ta, tb, m, n, k, 0.0);
          expect_product<float>(ta, tb, m, n, k, 1.0f);  // beta = 1: direct either way
          expect_product<double>(ta, tb, m, n, k, 1.0);
        }
  }
}

TEST(BlasRowBlocks, ProductsWithAShortInnerSizeEqualTheDefinition) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  const testing::UseStepGemm use(blas::StepGemm::libxsmm);  // restored on every way out
  const testing::UseRowBlocks blocks(blas::detail::RowBlocks::always);
  using blas::detail::runs_in_row_blocks;
  EXPECT_TRUE(runs_in_row_blocks<float>(3200, 1024, 64, 0.0));   // an LSTM's input product at M
  EXPECT_FALSE(runs_in_row_blocks<float>(3200, 1024, 129, 0.0));  // k too long
  EXPECT_FALSE(runs_in_row_blocks<float>(255, 1024, 64, 0.0));    // fewer than 4 blocks
  EXPECT_FALSE(runs_in_row_blocks<float>(3200, 1024, 64, 1.0));   // C is read
  EXPECT_FALSE(runs_in_row_blocks<float>(3200, 16, 8, 0.0));      // a block too small to share
  for (const bool tb : {false, true})
    for (const auto& [m, n, k] : std::vector<std::array<std::int64_t, 3>>{{1000, 256, 64}, {512, 130, 128}}) {
      ASSERT_TRUE(runs_in_row_blocks<double>(m, n, k, 0.0)) << m << " x " << n << " x " << k;
      // (A library without a kernel for the block falls back to OpenBLAS: the values hold either way.)
      parallel::detail::forget_back_off();  // (an earlier product's helper held off its core: shared again)
      const std::uint32_t jobs = parallel::tile_team_jobs();
      expect_product<float>(false, tb, m, n, k, 0.0f, 1.0f);  // (alpha = 1: row blocks)
      expect_product<double>(false, tb, m, n, k, 0.0, 1.0);
      if (parallel::tile_team_cpus() >= 2 && blas::detail::blas_threads_sleep_when_idle()) {
        EXPECT_GT(parallel::tile_team_jobs(), jobs) << "no block's tiles were shared";
      }
    }
}

}  // namespace
}  // namespace recur
