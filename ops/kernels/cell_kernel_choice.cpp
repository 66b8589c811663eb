// Which table of cell kernels runs (cell_kernel_choice_detail.hpp): decided once, from the
// CPU and RECUR_CPU_KERNELS.
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>

#include <atomic>
#include <cstdlib>
#include <string_view>

namespace recur::nn::detail {
namespace {

bool cpu_runs_avx2() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // may be called before libgcc's own initializer has run
  return __builtin_cpu_supports("avx2");  // also checks that the OS saves the YMM registers
#else
  return false;
#endif
}

KernelIsa initial_isa() {
  const char* env = std::getenv("RECUR_CPU_KERNELS");
  const std::string_view wanted = env ? env : "auto";
  if (wanted != "auto" && wanted != "avx2") return KernelIsa::portable;
  return kernels_for<float>(KernelIsa::avx2) ? KernelIsa::avx2 : KernelIsa::portable;
}

std::atomic<KernelIsa>& current() {
  static std::atomic<KernelIsa> isa{initial_isa()};
  return isa;
}

}  // namespace

template <class T>
const KernelTable<T>* kernels_for(KernelIsa isa) {
  if (isa == KernelIsa::portable) return &portable_kernels<T>();
  return cpu_runs_avx2() ? avx2_kernels<T>() : nullptr;  // the CPU first: that file is AVX2 code
}

template const KernelTable<float>* kernels_for<float>(KernelIsa);
template const KernelTable<double>* kernels_for<double>(KernelIsa);

KernelIsa kernel_isa() { return current().load(std::memory_order_relaxed); }

bool use_kernel_isa(KernelIsa isa) {
  if (!kernels_for<float>(isa)) return false;
  current().store(isa, std::memory_order_relaxed);
  return true;
}

}  // namespace recur::nn::detail
