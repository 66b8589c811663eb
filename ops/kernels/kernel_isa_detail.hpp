#pragma once
// Internal: the instruction set the elementwise kernels of this translation unit are
// compiled for. The kernel headers (fast_math_detail.hpp, nn/cell_kernels_detail.hpp) put
// their functions in `inline namespace RECUR_KERNEL_ISA`, so a file compiled with -mavx2
// (ops/kernels/cell_kernels_avx2.cpp) makes functions of other names than the portable ones:
// the linker can never pick an AVX2 copy of an inline function for a caller that must run
// on any x86-64 CPU. Callers reach the kernels through nn/cell_kernel_choice_detail.hpp.
#ifndef RECUR_KERNEL_ISA
#define RECUR_KERNEL_ISA isa_base
#endif
