// Which table of cell kernels runs (cell_kernel_choice_detail.hpp): decided once, from the
// CPU and RECUR_CPU_KERNELS.
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>

#include <atomic>
#include <cstdlib>
#include <string_view>
#include <utility>

namespace recur::nn::detail {
namespace {

// Whether the CPU runs `isa` (libgcc's checks include that the OS saves the registers).
bool cpu_checks(KernelIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();  // may be called before libgcc's own initializer has run
  if (isa == KernelIsa::avx2) return __builtin_cpu_supports("avx2");
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl");
#else
  return isa == KernelIsa::portable;
#endif
}
// Asked once per instruction set.
bool cpu_runs(KernelIsa isa) {
  static const bool avx2 = cpu_checks(KernelIsa::avx2), avx512 = cpu_checks(KernelIsa::avx512);
  return isa == KernelIsa::avx2 ? avx2 : avx512;
}

KernelIsa initial_isa() {
  const char* env = std::getenv("RECUR_CPU_KERNELS");
  const std::string_view wanted = env ? env : "auto";
  for (const auto& [isa, name] : {std::pair{KernelIsa::avx512, "avx512"}, std::pair{KernelIsa::avx2, "avx2"}})
    if ((wanted == "auto" || wanted == name) && kernels_for<float>(isa)) return isa;
  return KernelIsa::portable;
}

std::atomic<KernelIsa>& current() {
  static std::atomic<KernelIsa> isa{initial_isa()};
  return isa;
}

// The table of the instruction set in use, per T (use_kernel_isa sets both).
template <class T>
std::atomic<const KernelTable<T>*>& table_in_use() {
  static std::atomic<const KernelTable<T>*> table{kernels_for<T>(current().load(std::memory_order_relaxed))};
  return table;
}

}  // namespace

template <class T>
const KernelTable<T>* kernels_for(KernelIsa isa) {
  if (isa == KernelIsa::portable) return &portable_kernels<T>();
  if (!cpu_runs(isa)) return nullptr;  // the CPU first: those files are AVX2 or AVX-512 code
  return isa == KernelIsa::avx2 ? avx2_kernels<T>() : avx512_kernels<T>();
}

template const KernelTable<float>* kernels_for<float>(KernelIsa);
template const KernelTable<double>* kernels_for<double>(KernelIsa);

template <class T>
const KernelTable<T>& kernels() {
  return *table_in_use<T>().load(std::memory_order_relaxed);
}

template const KernelTable<float>& kernels<float>();
template const KernelTable<double>& kernels<double>();

KernelIsa kernel_isa() { return current().load(std::memory_order_relaxed); }

// A kernel call on another thread may meet the new float table and the old double one (or
// the reverse): the tables give the same bits.
bool use_kernel_isa(KernelIsa isa) {
  if (!kernels_for<float>(isa)) return false;
  current().store(isa, std::memory_order_relaxed);
  table_in_use<float>().store(kernels_for<float>(isa), std::memory_order_relaxed);
  table_in_use<double>().store(kernels_for<double>(isa), std::memory_order_relaxed);
  return true;
}

}  // namespace recur::nn::detail
