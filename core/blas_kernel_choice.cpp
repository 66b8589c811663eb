// Which OpenBLAS core recur asks for: a pure function of the CPU, the environment and
// OpenBLAS's own choice, so that every path is tested on any machine.
#include <algorithm>
#include <cctype>
#include <string_view>

#include <recur/core/blas_kernel_detail.hpp>

namespace recur::blas::detail {
namespace {
bool same_name(std::string_view a, std::string_view b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](char x, char y) {
    return std::tolower(static_cast<unsigned char>(x)) == std::tolower(static_cast<unsigned char>(y));
  });
}

KernelChoice keep(std::string reason) { return {{}, std::move(reason)}; }
}  // namespace

bool is_avx512_core(const std::string& openblas_core) {
  return std::ranges::any_of(std::initializer_list<std::string_view>{"SkylakeX", "Cooperlake", "SapphireRapids"},
                             [&](std::string_view name) { return same_name(openblas_core, name); });
}

KernelChoice choose_kernel(const KernelInputs& in) {
  if (in.recur_coretype_env && !same_name(*in.recur_coretype_env, "auto")) {
    if (same_name(*in.recur_coretype_env, "keep")) return keep("RECUR_BLAS_CORETYPE=keep: OpenBLAS's own choice");
    return keep("RECUR_BLAS_CORETYPE=" + *in.recur_coretype_env +
                " is neither auto nor keep: OpenBLAS's own choice kept");
  }
  if (in.openblas_coretype_env)
    return keep("OPENBLAS_CORETYPE=" + *in.openblas_coretype_env + " set by the user");
  if (is_avx512_core(in.openblas_core)) return keep("OpenBLAS already runs its AVX-512 kernels");
  if (!in.cpu.runs_avx512_kernels()) return keep("the CPU or the OS does not support AVX-512");
  // Only a DYNAMIC_ARCH build holds kernels for other CPUs than the one it was built for.
  if (in.openblas_config.find("DYNAMIC_ARCH") == std::string::npos)
    return keep("OpenBLAS was built without DYNAMIC_ARCH: it has no other kernels");
  if (in.cpu.avx512_bf16) return {"Cooperlake", "AVX-512 with bfloat16, but OpenBLAS chose " + in.openblas_core};
  return {"SkylakeX", "AVX-512, but OpenBLAS chose " + in.openblas_core};
}

}  // namespace recur::blas::detail
