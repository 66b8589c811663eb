// The cell kernels compiled for AVX-512 (cell_kernel_table_detail.hpp). CMakeLists.txt
// builds this file alone with -mavx512f -mavx512bw -mavx512dq -mavx512vl, 512-bit vectors
// preferred, and RECUR_KERNEL_ISA=isa_avx512 on x86-64; like the AVX2 file it includes
// nothing but the kernel headers, and -ffp-contract=off keeps its bits the portable ones.
#include <recur/ops/kernels/cell_kernel_table_detail.hpp>

namespace recur::nn::detail {

#if defined(__AVX512F__) && defined(__AVX512BW__) && defined(__AVX512DQ__) && defined(__AVX512VL__)
RECUR_ISA_KERNEL_TABLE(avx512_kernels, true)
#else
RECUR_ISA_KERNEL_TABLE(avx512_kernels, false)
#endif

}  // namespace recur::nn::detail
