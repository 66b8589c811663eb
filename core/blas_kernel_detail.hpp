#pragma once
// The parts of blas_kernel.cpp that tests reach: the CPU's AVX-512 features, the decision
// (a pure function of its inputs, so that both paths are tested on any machine) and the
// switch itself.
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include <recur/core/blas_kernel.hpp>

namespace recur::blas::detail {

// The CPU features OpenBLAS's SkylakeX and Haswell kernels need, and the OS's support for them.
struct CpuFeatures {
  bool avx512f = false, avx512cd = false, avx512bw = false, avx512dq = false, avx512vl = false;
  bool avx512_bf16 = false;   // Cooperlake's kernels add bfloat16 products
  bool os_saves_zmm = false;  // XCR0 enables the opmask and all 512-bit register state
  bool avx2 = false, fma = false;
  bool os_saves_ymm = false;  // XCR0 enables the 256-bit register state

  // Everything SkylakeX kernels execute, usable under this OS.
  bool runs_avx512_kernels() const {
    return avx512f && avx512cd && avx512bw && avx512dq && avx512vl && os_saves_zmm;
  }
  // Everything Haswell kernels execute, usable under this OS.
  bool runs_avx2_kernels() const { return avx2 && fma && os_saves_ymm; }
};

// This CPU's features (CPUID and XGETBV); all false on a CPU that is not x86.
CpuFeatures detect_cpu_features();

// Everything the decision depends on, read from the process by the caller.
struct KernelInputs {
  CpuFeatures cpu;
  std::optional<std::string> openblas_coretype_env;  // OPENBLAS_CORETYPE, when set
  std::optional<std::string> recur_coretype_env;     // RECUR_BLAS_CORETYPE, when set
  std::string openblas_core;                         // openblas_get_corename()
  std::string openblas_config;                       // openblas_get_config()
};

struct KernelChoice {
  std::string core;    // the OpenBLAS core to switch to; empty: keep OpenBLAS's choice
  std::string reason;  // why, for blas_info()
};

KernelChoice choose_kernel(const KernelInputs& in);

// OpenBLAS's core names compared as OpenBLAS compares them: in any case.
bool same_name(std::string_view a, std::string_view b);

// True for the names OpenBLAS gives its AVX-512 kernel sets (SkylakeX, Cooperlake,
// SapphireRapids), in any case.
bool is_avx512_core(const std::string& openblas_core);
// True for the names of OpenBLAS's Intel kernel sets older than Haswell's (Prescott,
// Nehalem, Sandybridge, ...: no AVX2, no FMA), in any case.
bool is_pre_avx2_core(const std::string& openblas_core);

// Makes OpenBLAS select its kernels again as if OPENBLAS_CORETYPE were `core`, and returns
// the core it now runs (openblas_get_corename()), or nullopt when this OpenBLAS cannot
// re-select (not a DYNAMIC_ARCH build). The process environment is left as it was.
// Not thread-safe: no BLAS call may run meanwhile (recur calls it once, as it loads).
std::optional<std::string> reselect_openblas_core(const std::string& core);

// Carries out `choice` for a process whose OpenBLAS picked `openblas_core` by itself:
// switches through `reselect` (reselect_openblas_core outside tests), keeps the result only
// if OpenBLAS now runs the kernels asked for (any AVX-512 set, when one was asked) and else
// restores `openblas_core`. Fills all but core and config.
using Reselect = std::function<std::optional<std::string>(const std::string& core)>;
BlasInfo apply_choice(const KernelChoice& choice, const std::string& openblas_core, const Reselect& reselect);

// Decides and switches on the first call (blas.cpp makes it from a static initializer);
// every call returns what that first one did, with `core` and `config` as they were then.
const BlasInfo& select_best_kernel_once();

}  // namespace recur::blas::detail
