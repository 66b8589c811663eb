// Which OpenBLAS core recur asks for: a pure function of the CPU, the environment and
// OpenBLAS's own choice, so that every path is tested on any machine.
#include <algorithm>
#include <cctype>
#include <string_view>

#include <recur/core/blas_kernel_detail.hpp>

namespace recur::blas::detail {
bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

namespace {
KernelChoice keep(std::string reason) { return {{}, std::move(reason)}; }
}  // namespace

bool is_avx512_core(const std::string& openblas_core) {
  return std::ranges::any_of(std::initializer_list<std::string_view>{"SkylakeX", "Cooperlake", "SapphireRapids"},
                             [&](std::string_view name) { return same_name(openblas_core, name); });
}

bool is_pre_avx2_core(const std::string& openblas_core) {
  return std::ranges::any_of(
      std::initializer_list<std::string_view>{"Katmai", "Coppermine", "Northwood", "Prescott", "Banias", "Atom",
                                              "Core2", "Penryn", "Dunnington", "Nehalem", "Sandybridge", "Unknown"},
      [&](std::string_view name) { return same_name(openblas_core, name); });
}

// OpenBLAS 0.3.21 (Debian 12's) picks its kernels from a table of CPU models
// (driver/others/dynamic.c, get_coretype). Two gaps cost a user of recur:
//  - an Intel family-6 model newer than the table (Raptor Lake, Emerald Rapids, Arrow and
//    Lunar Lake: extended model 0xB and up) falls through to the Prescott kernels (SSE3),
//    fixed upstream only in 0.3.25: such a CPU runs Haswell's, or with AVX-512 SkylakeX's;
//  - a CPU the table knows but maps below what it runs (Cannon Lake, model 0x66, has AVX-512
//    and gets Haswell), or a virtual CPU that reports an older model: its best set.
// A CPU that gets the kernels of its features (every AMD Zen, the known Intel models) is kept.
KernelChoice choose_kernel(const KernelInputs& in) {
  if (in.recur_coretype_env && !same_name(*in.recur_coretype_env, "auto")) {
    if (same_name(*in.recur_coretype_env, "keep")) return keep("RECUR_BLAS_CORETYPE=keep: OpenBLAS's own choice");
    return keep("RECUR_BLAS_CORETYPE=" + *in.recur_coretype_env +
                " is neither auto nor keep: OpenBLAS's own choice kept");
  }
  if (in.openblas_coretype_env)
    return keep("OPENBLAS_CORETYPE=" + *in.openblas_coretype_env + " set by the user");
  if (is_avx512_core(in.openblas_core)) return keep("OpenBLAS already runs its AVX-512 kernels");
  const bool avx512 = in.cpu.runs_avx512_kernels();
  if (!avx512 && !in.cpu.runs_avx2_kernels())
    return keep("the CPU or the OS supports neither AVX-512 nor AVX2 with FMA");
  if (!avx512 && !is_pre_avx2_core(in.openblas_core))
    return keep("the CPU or the OS does not support AVX-512, and OpenBLAS's " + in.openblas_core +
                " kernels use AVX2");
  // Only a DYNAMIC_ARCH build holds kernels for other CPUs than the one it was built for.
  if (in.openblas_config.find("DYNAMIC_ARCH") == std::string::npos)
    return keep("OpenBLAS was built without DYNAMIC_ARCH: it has no other kernels");
  if (!avx512) return {"Haswell", "AVX2 with FMA, but OpenBLAS chose " + in.openblas_core};
  if (in.cpu.avx512_bf16) return {"Cooperlake", "AVX-512 with bfloat16, but OpenBLAS chose " + in.openblas_core};
  return {"SkylakeX", "AVX-512, but OpenBLAS chose " + in.openblas_core};
}

}  // namespace recur::blas::detail
