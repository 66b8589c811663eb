// A product on libxsmm's kernels leaves the upper halves of the AVX registers clear
// (core/repeated_gemm.cpp, clear_upper_halves): libxsmm's JIT code returns with them in use,
// and the SSE code after it then ran slower on Intel CPUs (a captured LSTM cell's small step,
// measured, by a fifth). The CPU says which parts of its register state are in use through
// XGETBV with ECX = 1 (XINUSE); where it cannot, or libxsmm makes no kernel, the test skips.
#include <gtest/gtest.h>

#include <cpuid.h>
#include <immintrin.h>

#include <cstdint>
#include <string>
#include <vector>

#include <recur/core/repeated_gemm.hpp>

#include "step_gemm_scope.hpp"

namespace recur {
namespace {

// XINUSE bits: 2 the upper halves of YMM0-15, 6 the upper halves of ZMM0-15.
constexpr std::uint64_t kUpperHalvesInUse = (1u << 2) | (1u << 6);

bool cpu_reports_state_in_use() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return false;
  if (__get_cpuid_max(0, nullptr) < 0xD) return false;
  __cpuid_count(0xD, 1, a, b, c, d);
  return (a & (1u << 2)) != 0;  // XGETBV with ECX = 1
}

[[gnu::target("xsave")]] std::uint64_t state_in_use() { return _xgetbv(1); }

TEST(RepeatedGemm, LibxsmmKernelsLeaveTheUpperHalvesOfTheVectorRegistersClear) {
  if (!blas::libxsmm_built_in()) GTEST_SKIP() << "recur was built without libxsmm";
  SKIP_UNLESS_TARGET_RUNS_HERE();
  if (!cpu_reports_state_in_use()) GTEST_SKIP() << "this CPU does not report its register state in use (XGETBV 1)";
  const testing::UseStepGemm use(blas::StepGemm::libxsmm);
  const std::vector<float> w(32 * 128, 0.5f), h(32, 1.f);
  std::vector<float> out(128);
  const blas::RepeatedGemm<float> product(1, 128, 32, w.data(), 128, false, 32, 128, 0.f);
  if (std::string(product.backend()) != "libxsmm") GTEST_SKIP() << "libxsmm made no kernel for this shape";
  if (const std::uint64_t before = state_in_use(); before & kUpperHalvesInUse)
    GTEST_SKIP() << "the upper halves were in use before the product (XINUSE " << before << "): the test cannot tell";
  product(h.data(), out.data());
  const std::uint64_t after = state_in_use();
  EXPECT_EQ(after & kUpperHalvesInUse, 0u) << "XINUSE " << after;
  EXPECT_EQ(out[0], 16.f);  // the product ran: 32 terms of 0.5
}

}  // namespace
}  // namespace recur
