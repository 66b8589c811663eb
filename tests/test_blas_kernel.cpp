// OpenBLAS's kernel choice (core/blas_kernel.cpp): the pure decision on both paths with
// injected inputs, the CPU probe against GCC's, the switch itself on this machine, and the
// environment switches in fresh processes (blas_info_probe).
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include <recur/core/blas_kernel_detail.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

using blas::detail::choose_kernel;
using blas::detail::CpuFeatures;
using blas::detail::KernelInputs;

constexpr const char* kDebianConfig = "OpenBLAS 0.3.21 NO_LAPACKE DYNAMIC_ARCH NO_AFFINITY Haswell MAX_THREADS=64";

CpuFeatures avx512_cpu() {
  return {.avx512f = true, .avx512cd = true, .avx512bw = true, .avx512dq = true, .avx512vl = true,
          .avx512_bf16 = false, .os_saves_zmm = true};
}

KernelInputs inputs(CpuFeatures cpu, std::string core = "Haswell") {
  return {.cpu = cpu, .openblas_coretype_env = {}, .recur_coretype_env = {}, .openblas_core = std::move(core),
          .openblas_config = kDebianConfig};
}

TEST(BlasKernelChoice, Avx512CpuOnAnAvx2CoreSwitchesToSkylakeX) {
  for (const char* core : {"Haswell", "Zen", "Sandybridge"}) EXPECT_EQ(choose_kernel(inputs(avx512_cpu(), core)).core, "SkylakeX") << core;
}

CpuFeatures avx2_cpu() { return {.avx2 = true, .fma = true, .os_saves_ymm = true}; }

// Debian 12's OpenBLAS sends an Intel model newer than its table (Raptor Lake, Emerald
// Rapids) to Prescott's SSE3 kernels: a CPU with AVX2 and FMA moves to Haswell's, one with
// AVX-512 to SkylakeX's.
TEST(BlasKernelChoice, ACpuSentToPreAvx2KernelsMovesUp) {
  for (const char* core : {"Prescott", "Nehalem", "Sandybridge", "CORE2"}) {
    const auto choice = choose_kernel(inputs(avx2_cpu(), core));
    EXPECT_EQ(choice.core, "Haswell") << core;
    EXPECT_NE(choice.reason.find(core), std::string::npos) << choice.reason;
    CpuFeatures both = avx512_cpu();
    both.avx2 = both.fma = both.os_saves_ymm = true;
    EXPECT_EQ(choose_kernel(inputs(both, core)).core, "SkylakeX") << core;
  }
}

// Without AVX2 the Haswell kernels cannot run; with AVX2 kernels already (Haswell, Zen) there
// is nothing better without AVX-512.
TEST(BlasKernelChoice, AnAvx2CpuOnAvx2KernelsOrWithoutFmaIsKept) {
  for (const char* core : {"Haswell", "Zen", "Excavator"}) {
    const auto choice = choose_kernel(inputs(avx2_cpu(), core));
    EXPECT_EQ(choice.core, "") << core;
    EXPECT_NE(choice.reason.find("AVX-512"), std::string::npos) << choice.reason;
  }
  for (bool CpuFeatures::*feature : {&CpuFeatures::avx2, &CpuFeatures::fma, &CpuFeatures::os_saves_ymm}) {
    CpuFeatures cpu = avx2_cpu();
    cpu.*feature = false;
    EXPECT_EQ(choose_kernel(inputs(cpu, "Prescott")).core, "");
  }
  KernelInputs static_build = inputs(avx2_cpu(), "Prescott");
  static_build.openblas_config = "OpenBLAS 0.3.21 NO_LAPACKE Prescott MAX_THREADS=64";
  EXPECT_EQ(choose_kernel(static_build).core, "");
}

TEST(BlasKernelChoice, Bfloat16CpuSwitchesToCooperlake) {
  CpuFeatures cpu = avx512_cpu();
  cpu.avx512_bf16 = true;
  EXPECT_EQ(choose_kernel(inputs(cpu, "Zen")).core, "Cooperlake");
}

TEST(BlasKernelChoice, WithoutAnyOneAvx512FeatureNothingChanges) {
  EXPECT_EQ(choose_kernel(inputs(CpuFeatures{}, "Zen")).core, "");
  for (bool CpuFeatures::*feature : {&CpuFeatures::avx512f, &CpuFeatures::avx512cd, &CpuFeatures::avx512bw,
                                     &CpuFeatures::avx512dq, &CpuFeatures::avx512vl, &CpuFeatures::os_saves_zmm}) {
    CpuFeatures cpu = avx512_cpu();
    cpu.avx512_bf16 = true;
    cpu.*feature = false;
    const auto choice = choose_kernel(inputs(cpu, "Haswell"));
    EXPECT_EQ(choice.core, "");
    EXPECT_NE(choice.reason.find("AVX-512"), std::string::npos) << choice.reason;
  }
}

TEST(BlasKernelChoice, TheUsersOpenblasCoretypeWins) {
  for (const char* value : {"Haswell", "SkylakeX", ""}) {
    KernelInputs in = inputs(avx512_cpu());
    in.openblas_coretype_env = value;
    const auto choice = choose_kernel(in);
    EXPECT_EQ(choice.core, "") << value;
    EXPECT_NE(choice.reason.find("OPENBLAS_CORETYPE"), std::string::npos) << choice.reason;
  }
}

TEST(BlasKernelChoice, RecurCoretypeKeepTurnsItOffAndAutoLeavesItOn) {
  const std::map<std::string, std::string> expected = {
      {"keep", ""}, {"KEEP", ""}, {"auto", "SkylakeX"}, {"Auto", "SkylakeX"}, {"SkylakeX", ""}, {"", ""}};
  for (const auto& [value, core] : expected) {
    KernelInputs in = inputs(avx512_cpu());
    in.recur_coretype_env = value;
    const auto choice = choose_kernel(in);
    EXPECT_EQ(choice.core, core) << "RECUR_BLAS_CORETYPE=" << value;
    if (core.empty()) {
      EXPECT_NE(choice.reason.find("RECUR_BLAS_CORETYPE"), std::string::npos) << choice.reason;
    }
  }
}

TEST(BlasKernelChoice, AnAvx512CoreIsKept) {
  for (const char* core : {"SkylakeX", "Cooperlake", "cooperlake", "SapphireRapids"}) {
    CpuFeatures cpu = avx512_cpu();
    cpu.avx512_bf16 = true;
    EXPECT_EQ(choose_kernel(inputs(cpu, core)).core, "") << core;
  }
}

TEST(BlasKernelChoice, AnOpenblasWithoutDynamicArchIsKept) {
  KernelInputs in = inputs(avx512_cpu());
  in.openblas_config = "OpenBLAS 0.3.21 NO_LAPACKE Haswell MAX_THREADS=64";
  const auto choice = choose_kernel(in);
  EXPECT_EQ(choice.core, "");
  EXPECT_NE(choice.reason.find("DYNAMIC_ARCH"), std::string::npos) << choice.reason;
}

TEST(BlasKernelChoice, Avx512CoreNames) {
  EXPECT_TRUE(blas::detail::is_avx512_core("SkylakeX"));
  EXPECT_TRUE(blas::detail::is_avx512_core("skylakex"));
  EXPECT_TRUE(blas::detail::is_avx512_core("Cooperlake"));
  EXPECT_FALSE(blas::detail::is_avx512_core("Haswell"));
  EXPECT_FALSE(blas::detail::is_avx512_core("Zen"));
  EXPECT_FALSE(blas::detail::is_avx512_core("SkylakeX2"));
  EXPECT_FALSE(blas::detail::is_avx512_core(""));
  EXPECT_TRUE(blas::detail::is_pre_avx2_core("Prescott"));
  EXPECT_TRUE(blas::detail::is_pre_avx2_core("sandybridge"));
  EXPECT_FALSE(blas::detail::is_pre_avx2_core("Haswell"));
  EXPECT_FALSE(blas::detail::is_pre_avx2_core("Zen"));
  EXPECT_FALSE(blas::detail::is_pre_avx2_core("SkylakeX"));
}

// apply_choice with a stand-in for OpenBLAS: it records the cores asked for and answers
// with the core the installed library would end up on.
struct FakeOpenblas {
  std::map<std::string, std::optional<std::string>> answers;
  std::vector<std::string> asked;
  blas::detail::Reselect reselect() {
    return [this](const std::string& core) {
      asked.push_back(core);
      return answers.at(core);
    };
  }
};

TEST(BlasKernelApply, AnAvx512AnswerIsKept) {
  FakeOpenblas fake{.answers = {{"SkylakeX", "SkylakeX"}}, .asked = {}};
  const BlasInfo info = blas::detail::apply_choice({"SkylakeX", "why"}, "Zen", fake.reselect());
  EXPECT_TRUE(info.switched);
  EXPECT_EQ(info.openblas_core, "Zen");
  EXPECT_EQ(info.reason, "why");
  EXPECT_EQ(fake.asked, (std::vector<std::string>{"SkylakeX"}));
}

TEST(BlasKernelApply, AnOpenblasWithoutAvx512KernelsIsPutBack) {
  // A build without AVX-512 maps the name SkylakeX to its Haswell table.
  FakeOpenblas fake{.answers = {{"SkylakeX", "Haswell"}, {"Zen", "Zen"}}, .asked = {}};
  const BlasInfo info = blas::detail::apply_choice({"SkylakeX", "why"}, "Zen", fake.reselect());
  EXPECT_FALSE(info.switched);
  EXPECT_EQ(fake.asked, (std::vector<std::string>{"SkylakeX", "Zen"}));
  EXPECT_NE(info.reason.find("no AVX-512 kernels"), std::string::npos) << info.reason;
}

TEST(BlasKernelApply, HaswellIsKeptOnlyWhenOpenblasRunsIt) {
  FakeOpenblas fine{.answers = {{"Haswell", "Haswell"}}, .asked = {}};
  EXPECT_TRUE(blas::detail::apply_choice({"Haswell", "why"}, "Prescott", fine.reselect()).switched);
  FakeOpenblas without{.answers = {{"Haswell", "Sandybridge"}, {"Prescott", "Prescott"}}, .asked = {}};
  const BlasInfo info = blas::detail::apply_choice({"Haswell", "why"}, "Prescott", without.reselect());
  EXPECT_FALSE(info.switched);
  EXPECT_EQ(without.asked, (std::vector<std::string>{"Haswell", "Prescott"}));
  EXPECT_NE(info.reason.find("no Haswell kernels"), std::string::npos) << info.reason;
}

TEST(BlasKernelApply, AnOpenblasThatCannotReselectIsLeftAlone) {
  FakeOpenblas fake{.answers = {{"Cooperlake", std::nullopt}}, .asked = {}};
  const BlasInfo info = blas::detail::apply_choice({"Cooperlake", "why"}, "Haswell", fake.reselect());
  EXPECT_FALSE(info.switched);
  EXPECT_EQ(fake.asked, (std::vector<std::string>{"Cooperlake"}));
  EXPECT_NE(info.reason.find("cannot select"), std::string::npos) << info.reason;
}

TEST(BlasKernelApply, KeepingCallsNothing) {
  FakeOpenblas fake;
  const BlasInfo info = blas::detail::apply_choice({"", "the CPU or the OS does not support AVX-512"}, "Zen", fake.reselect());
  EXPECT_FALSE(info.switched);
  EXPECT_TRUE(fake.asked.empty());
  EXPECT_EQ(info.reason, "the CPU or the OS does not support AVX-512");
}

// GCC's own probe (which also checks the OS's register state) must agree with ours.
TEST(BlasKernelCpu, FeaturesAgreeWithTheCompilersProbe) {
  const CpuFeatures f = blas::detail::detect_cpu_features();
  __builtin_cpu_init();
  EXPECT_EQ(f.avx512f && f.os_saves_zmm, __builtin_cpu_supports("avx512f") != 0);
  EXPECT_EQ(f.avx512cd && f.os_saves_zmm, __builtin_cpu_supports("avx512cd") != 0);
  EXPECT_EQ(f.avx512bw && f.os_saves_zmm, __builtin_cpu_supports("avx512bw") != 0);
  EXPECT_EQ(f.avx512dq && f.os_saves_zmm, __builtin_cpu_supports("avx512dq") != 0);
  EXPECT_EQ(f.avx512vl && f.os_saves_zmm, __builtin_cpu_supports("avx512vl") != 0);
  EXPECT_EQ(f.avx2 && f.os_saves_ymm, __builtin_cpu_supports("avx2") != 0);
  EXPECT_EQ(f.fma && f.os_saves_ymm, __builtin_cpu_supports("fma") != 0);
}

// matmul against a plain triple loop in double, on odd sizes (edge kernels) and sizes large
// enough for OpenBLAS to use its threads.
void expect_matmul_matches_naive_loop(DType dtype) {
  Generator gen(11);
  const double tolerance = dtype == DType::float32 ? 1e-4 : 1e-12;
  for (const auto& [m, k, n] : {std::array<std::int64_t, 3>{7, 13, 5}, {67, 129, 45}, {300, 257, 311}}) {
    const Tensor a = normal({m, k}, 0.0, 1.0, gen, dtype), b = normal({k, n}, 0.0, 1.0, gen, dtype);
    const auto av = to_vector<double>(a), bv = to_vector<double>(b), cv = to_vector<double>(matmul(a, b));
    double worst = 0.0;
    for (std::int64_t i = 0; i < m; ++i)
      for (std::int64_t j = 0; j < n; ++j) {
        double sum = 0.0;
        for (std::int64_t p = 0; p < k; ++p) sum += av[i * k + p] * bv[p * n + j];
        worst = std::max(worst, std::abs(cv[i * n + j] - sum) / (1.0 + std::abs(sum)));
      }
    EXPECT_LT(worst, tolerance) << dtype << " " << m << "x" << k << "x" << n << " on "
                                << blas_info().core;
  }
}

bool recur_may_switch() {
  return std::getenv("OPENBLAS_CORETYPE") == nullptr && std::getenv("RECUR_BLAS_CORETYPE") == nullptr;
}

TEST(BlasKernel, OnAnAvx512CpuProductsRunOnAvx512Kernels) {
  if (!blas::detail::detect_cpu_features().runs_avx512_kernels()) GTEST_SKIP() << "this CPU has no AVX-512";
  if (!recur_may_switch()) GTEST_SKIP() << "OPENBLAS_CORETYPE or RECUR_BLAS_CORETYPE is set";
  expect_matmul_matches_naive_loop(DType::float32);
  const BlasInfo info = blas_info();
  EXPECT_TRUE(blas::detail::is_avx512_core(info.core)) << info.core << ": " << info.reason;
  EXPECT_NE(info.config.find(info.core), std::string::npos) << info.config;
  EXPECT_EQ(info.switched, !blas::detail::is_avx512_core(info.openblas_core));
  expect_matmul_matches_naive_loop(DType::float64);
}

TEST(BlasKernel, WithoutAvx512NothingChanges) {
  if (blas::detail::detect_cpu_features().runs_avx512_kernels()) GTEST_SKIP() << "this CPU has AVX-512";
  expect_matmul_matches_naive_loop(DType::float32);
  const BlasInfo info = blas_info();
  EXPECT_FALSE(info.switched) << info.reason;
  EXPECT_EQ(info.core, info.openblas_core);
  EXPECT_NE(info.reason.find(recur_may_switch() ? "AVX-512" : "_CORETYPE"), std::string::npos) << info.reason;
  expect_matmul_matches_naive_loop(DType::float64);
}

// The switch itself, exercised on any AVX2 machine with a core it can run: OpenBLAS moves
// to Haswell's kernels, products stay right, and it moves back.
TEST(BlasKernel, ReselectingACoreTakesEffectAndProductsStayRight) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") == 0 || __builtin_cpu_supports("fma") == 0) GTEST_SKIP() << "no AVX2";
  const std::string before = blas_info().core;
  const std::string target = before == "Haswell" ? "Zen" : "Haswell";
  const char* env_before = std::getenv("OPENBLAS_CORETYPE");
  const std::string env_value = env_before ? env_before : "(unset)";
  ASSERT_EQ(blas::detail::reselect_openblas_core(target), target);
  EXPECT_EQ(blas_info().core, target);
  const char* env_after = std::getenv("OPENBLAS_CORETYPE");
  EXPECT_EQ(env_after ? env_after : "(unset)", env_value) << "the environment was not restored";
  expect_matmul_matches_naive_loop(DType::float32);
  expect_matmul_matches_naive_loop(DType::float64);
  ASSERT_EQ(blas::detail::reselect_openblas_core(before), before);
  EXPECT_EQ(blas_info().core, before);
}

// blas_info() of a fresh process whose environment is `assignments` (and neither variable else).
std::map<std::string, std::string> probe(const std::string& assignments) {
  const std::string command =
      "env -u OPENBLAS_CORETYPE -u RECUR_BLAS_CORETYPE " + assignments + " '" + RECUR_BLAS_PROBE + "'";
  std::unique_ptr<FILE, int (*)(FILE*)> pipe(popen(command.c_str(), "r"), pclose);
  std::map<std::string, std::string> fields;
  if (!pipe) return fields;
  std::array<char, 512> line{};
  while (std::fgets(line.data(), line.size(), pipe.get()) != nullptr) {
    std::string s(line.data());
    if (!s.empty() && s.back() == '\n') s.pop_back();
    if (const auto eq = s.find('='); eq != std::string::npos) fields[s.substr(0, eq)] = s.substr(eq + 1);
  }
  return fields;
}

TEST(BlasKernelProcess, ByDefaultAProcessRunsTheBestCoreForItsCpu) {
  const auto info = probe("");
  ASSERT_TRUE(info.contains("core")) << "blas_info_probe did not run";
  const blas::detail::CpuFeatures cpu = blas::detail::detect_cpu_features();
  if (cpu.runs_avx512_kernels()) {
    EXPECT_TRUE(blas::detail::is_avx512_core(info.at("core"))) << info.at("core") << ": " << info.at("reason");
  } else if (cpu.runs_avx2_kernels() && blas::detail::is_pre_avx2_core(info.at("openblas_core"))) {
    EXPECT_EQ(info.at("core"), "Haswell") << info.at("reason");
  } else {
    EXPECT_EQ(info.at("core"), info.at("openblas_core"));
    EXPECT_EQ(info.at("switched"), "0");
  }
}

TEST(BlasKernelProcess, RecurCoretypeKeepLeavesOpenblasOwnChoice) {
  const auto info = probe("RECUR_BLAS_CORETYPE=keep");
  ASSERT_TRUE(info.contains("core")) << "blas_info_probe did not run";
  EXPECT_EQ(info.at("switched"), "0");
  EXPECT_EQ(info.at("core"), info.at("openblas_core"));
  EXPECT_NE(info.at("reason").find("RECUR_BLAS_CORETYPE=keep"), std::string::npos) << info.at("reason");
  // OpenBLAS's own choice is what a process without recur's switch gets on this CPU; this
  // process's own core is that choice only when its environment names none (a user's
  // OPENBLAS_CORETYPE, which the probe was run without, wins here).
  if (std::getenv("OPENBLAS_CORETYPE") == nullptr) {
    EXPECT_EQ(blas::detail::is_avx512_core(info.at("core")), blas::detail::is_avx512_core(blas_info().openblas_core));
  }
}

TEST(BlasKernelProcess, TheUsersOpenblasCoretypeWins) {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx2") == 0 || __builtin_cpu_supports("fma") == 0) GTEST_SKIP() << "no AVX2";
  const auto info = probe("OPENBLAS_CORETYPE=Haswell");
  ASSERT_TRUE(info.contains("core")) << "blas_info_probe did not run";
  EXPECT_EQ(info.at("core"), "Haswell");
  EXPECT_EQ(info.at("switched"), "0");
  EXPECT_NE(info.at("reason").find("OPENBLAS_CORETYPE=Haswell"), std::string::npos) << info.at("reason");
}

}  // namespace
}  // namespace recur
