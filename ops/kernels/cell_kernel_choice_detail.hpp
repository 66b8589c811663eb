#pragma once
// Internal: which table of cell kernels runs (cell_kernel_table_detail.hpp). kernels<T>()
// is the table in use: AVX-512's when the CPU (and the OS) runs AVX-512 F, BW, DQ and VL,
// else AVX2's when it runs AVX2, else the portable one. RECUR_CPU_KERNELS in the
// environment, read at the first call: `auto` (or unset) as above, `portable` the portable
// table, `avx2` or `avx512` that table where the CPU runs it (else the portable one); any
// other value keeps the portable table, the choice that runs everywhere.
#include <recur/ops/kernels/cell_kernel_table_detail.hpp>

namespace recur::nn::detail {

enum class KernelIsa { portable, avx2, avx512 };

// The table of `isa`, or null when this build or this CPU has none.
template <class T>
const KernelTable<T>* kernels_for(KernelIsa isa);

// The instruction set in use.
KernelIsa kernel_isa();
// Switches every later kernel call to `isa` (tests and the benchmark compare both); false,
// and no change, when that table is missing. The tables give the same bits, so a switch
// while kernels run on other threads changes only their speed.
bool use_kernel_isa(KernelIsa isa);

// The table in use: kept by use_kernel_isa, one load (a captured step's chain asks at each
// of its rows).
template <class T>
const KernelTable<T>& kernels();

// use_kernel_isa for a scope, then back.
class ScopedKernelIsa {
 public:
  explicit ScopedKernelIsa(KernelIsa isa) : before_(kernel_isa()), switched_(use_kernel_isa(isa)) {}
  ~ScopedKernelIsa() { use_kernel_isa(before_); }
  ScopedKernelIsa(const ScopedKernelIsa&) = delete;
  ScopedKernelIsa& operator=(const ScopedKernelIsa&) = delete;
  bool switched() const { return switched_; }

 private:
  KernelIsa before_;
  bool switched_;
};

}  // namespace recur::nn::detail
