// The cell kernels compiled for AVX2 (cell_kernel_table_detail.hpp). CMakeLists.txt builds
// this file alone with -mavx2 and RECUR_KERNEL_ISA=isa_avx2 on x86-64; it must include
// nothing but the kernel headers, whose functions the ISA namespace keeps apart from the
// portable ones. Only -mavx2, and -ffp-contract=off: a fused multiply-add would round
// differently from the portable kernels.
#include <recur/ops/kernels/cell_kernel_table_detail.hpp>

namespace recur::nn::detail {

template <class T>
const KernelTable<T>* avx2_kernels() {
#if defined(__AVX2__)
  static constexpr KernelTable<T> table = this_isa_kernels<T>();
  return &table;
#else
  return nullptr;
#endif
}

template const KernelTable<float>* avx2_kernels<float>();
template const KernelTable<double>* avx2_kernels<double>();

}  // namespace recur::nn::detail
