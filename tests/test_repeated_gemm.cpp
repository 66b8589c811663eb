// The per-step recurrent products (core/repeated_gemm.hpp): libxsmm's kernels against
// OpenBLAS's gemm and a plain loop, on every form the fused layers use, and the layers
// themselves with each backend. Where recur was built without libxsmm, or this CPU gets no
// libxsmm kernel, the libxsmm side is skipped and says so.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include <recur/core/repeated_gemm.hpp>
#include <recur/recur.hpp>

#include "values.hpp"

namespace recur {
namespace {

using blas::RepeatedGemm;
using blas::StepGemm;

// The backend for one scope, then the process default again.
struct UseStepGemm {
  explicit UseStepGemm(StepGemm which) : before(blas::step_gemm()) { blas::set_step_gemm(which); }
  ~UseStepGemm() { blas::set_step_gemm(before); }
  StepGemm before;
};

// Whether the kernels LIBXSMM_TARGET asks for (ctest runs these tests once per target) can
// run on this CPU: libxsmm makes what it is asked for.
bool target_runs_here() {
  const char* target = std::getenv("LIBXSMM_TARGET");
  if (!target) return true;
  __builtin_cpu_init();
  const std::string t = target;
  if (t == "hsw") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (t == "snb") return __builtin_cpu_supports("avx");
  if (t == "wsm") return __builtin_cpu_supports("sse4.2");
  return t == "generic";
}
#define SKIP_UNLESS_TARGET_RUNS_HERE() \
  if (!target_runs_here()) GTEST_SKIP() << "this CPU cannot run LIBXSMM_TARGET=" << std::getenv("LIBXSMM_TARGET")

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

// C = A op(B) + beta C0 with strides wider than the rows: by the product, and by a plain loop.
template <class T>
void expect_product_right(StepGemm which, Shape3 s, bool transposed, T beta, bool expect_libxsmm) {
  const UseStepGemm use(which);
  const std::int64_t lda = s.k + 3, ldc = s.n + 5, ldb = (transposed ? s.k : s.n) + 2;
  const std::vector<T> a = random_values<T>(static_cast<std::size_t>(s.m * lda), 1);
  const std::vector<T> b = random_values<T>(static_cast<std::size_t>((transposed ? s.n : s.k) * ldb), 2);
  std::vector<T> c = random_values<T>(static_cast<std::size_t>(s.m * ldc), 3), want = c;
  const RepeatedGemm<T> product(s.m, s.n, s.k, b.data(), ldb, transposed, lda, ldc, beta);
  if (expect_libxsmm && std::string(product.backend()) != "libxsmm")
    GTEST_SKIP() << "libxsmm made no kernel for this shape on this CPU";
  if (!expect_libxsmm) {
    EXPECT_STREQ(product.backend(), "openblas");
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
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 0.f, true);
      expect_product_right<float>(StepGemm::libxsmm, s, transposed, 1.f, true);
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 0.0, true);
      expect_product_right<double>(StepGemm::libxsmm, s, transposed, 1.0, true);
    }
}

TEST(RepeatedGemm, OpenblasEqualsAPlainLoop) {
  for (const Shape3& s : kSmall)
    for (bool transposed : {false, true}) {
      expect_product_right<float>(StepGemm::openblas, s, transposed, 1.f, false);
      expect_product_right<double>(StepGemm::openblas, s, transposed, 0.0, false);
    }
}

// Large products keep OpenBLAS, whose threads pay there (more than 64 MFLOP: 2 m n k).
TEST(RepeatedGemm, LargeProductsStayOnOpenblas) {
  SKIP_UNLESS_TARGET_RUNS_HERE();
  expect_product_right<double>(StepGemm::libxsmm, {1, 4096, 8200}, true, 1.0, false);
}

// The M configuration's products (B32 H256: 17 MFLOP) run on libxsmm.
TEST(RepeatedGemm, MediumProductsRunOnLibxsmm) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  expect_product_right<float>(StepGemm::libxsmm, {32, 1024, 256}, true, 1.f, true);
  expect_product_right<double>(StepGemm::libxsmm, {32, 256, 1024}, false, 1.0, true);
}

// One training step of each fused layer on both backends (float64, S-like sizes so that
// libxsmm runs): outputs and every gradient agree.
TEST(RepeatedGemm, FusedLayersAgreeOnBothBackends) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  struct Run {
    std::vector<Tensor> values;
  };
  auto train = [](const std::string& cell, StepGemm which) {
    const UseStepGemm use(which);
    Generator gen(5);
    nn::RecurrentOptions o{.input_size = 6, .hidden_size = 20, .num_layers = 2, .bidirectional = true};
    o.dtype = DType::float64;
    Tape tape;
    const Var x = tape.variable(uniform({7, 3, 6}, -1, 1, gen, DType::float64));
    Run r;
    auto finish = [&](const Module& m, const nn::RecurrentOutput& out) {
      const Var loss = sum(out.output * out.output) + sum(out.h_n);
      tape.backward(loss);
      r.values.push_back(out.output.value());
      r.values.push_back(x.grad());
      for (const auto& [name, p] : m.named_parameters()) r.values.push_back(p.grad());
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
    return r;
  };
  for (const std::string cell : {"lstm", "gru", "rnn"}) {
    const Run a = train(cell, StepGemm::libxsmm), b = train(cell, StepGemm::openblas);
    ASSERT_EQ(a.values.size(), b.values.size());
    for (std::size_t i = 0; i < a.values.size(); ++i) {
      const std::vector<double> x = testing::values(a.values[i]), y = testing::values(b.values[i]);
      ASSERT_EQ(x.size(), y.size());
      for (std::size_t j = 0; j < x.size(); ++j)
        ASSERT_NEAR(x[j], y[j], 1e-12 * (1 + std::abs(y[j]))) << cell << " value " << i << " element " << j;
    }
  }
}

}  // namespace
}  // namespace recur
