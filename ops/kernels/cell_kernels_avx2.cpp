// The cell kernels compiled for AVX2 (cell_kernel_table_detail.hpp). CMakeLists.txt builds
// this file alone with -mavx2 and RECUR_KERNEL_ISA=isa_avx2 on x86-64; it must include
// nothing but the kernel headers, whose functions the ISA namespace keeps apart from the
// portable ones. Only -mavx2, and -ffp-contract=off: a fused multiply-add would round
// differently from the portable kernels.
#include <recur/ops/kernels/cell_kernel_table_detail.hpp>

namespace recur::nn::detail {

#if defined(__AVX2__)
RECUR_ISA_KERNEL_TABLE(avx2_kernels, true)
#else
RECUR_ISA_KERNEL_TABLE(avx2_kernels, false)
#endif

}  // namespace recur::nn::detail
