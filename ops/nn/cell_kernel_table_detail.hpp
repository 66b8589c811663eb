#pragma once
// Internal: the elementwise kernels of the recurrent cells (cell_kernels_detail.hpp) and the
// sigmoid and tanh rows (fast_math_detail.hpp), reached through a table of function
// pointers, one table per instruction set they were compiled for:
//   portable: baseline x86-64 (SSE2) or whatever the target's baseline is;
//   avx2:     cell_kernels_avx2.cpp, compiled with -mavx2 on x86-64: the exp and select
//             loops vectorize 8 floats wide with AVX2's integer ops, about 2x faster
//             (bench/bench_cell_kernels.cpp).
// kernels<T>() is the fastest table the CPU runs, chosen once; RECUR_CPU_KERNELS=portable
// in the environment keeps the portable one. Both compute the same IEEE operations in the
// same order (no FMA contraction, no reassociation), so their results are bit-identical
// and a user's results do not depend on the CPU.
//
// This header may include kernel headers only: cell_kernels_avx2.cpp includes it.
#include <cstdint>

#include <recur/ops/fast_math_detail.hpp>
#include <recur/ops/nn/cell_kernels_detail.hpp>

namespace recur::nn::detail {

template <class T>
struct KernelTable {
  struct Lstm {
    decltype(&LstmKernel<T>::activations) activations;
    decltype(&LstmKernel<T>::cell_update) cell_update;
    decltype(&LstmKernel<T>::forward) forward;
    decltype(&LstmKernel<T>::backward) backward;
  } lstm;
  struct Rnn {
    decltype(&RnnKernel<T>::forward) forward;
    decltype(&RnnKernel<T>::backward) backward;
  } rnn;
  struct Gru {
    decltype(&GruKernel<T>::reset_update) reset_update;
    decltype(&GruKernel<T>::candidate) candidate;
    decltype(&GruKernel<T>::blend) blend;
    decltype(&GruKernel<T>::forward) forward;
    decltype(&GruKernel<T>::backward_blend) backward_blend;
    decltype(&GruKernel<T>::backward_reset_scaled) backward_reset_scaled;
    decltype(&GruKernel<T>::backward_reset_inner) backward_reset_inner;
    decltype(&GruKernel<T>::backward) backward;
  } gru;
  decltype(&recur::detail::sigmoid_row<T>) sigmoid_row;
  decltype(&recur::detail::tanh_row<T>) tanh_row;
};

inline namespace RECUR_KERNEL_ISA {
// The table of the instruction set this file is compiled for.
template <class T>
constexpr KernelTable<T> this_isa_kernels() {
  using L = LstmKernel<T>;
  using R = RnnKernel<T>;
  using G = GruKernel<T>;
  return {{&L::activations, &L::cell_update, &L::forward, &L::backward},
          {&R::forward, &R::backward},
          {&G::reset_update, &G::candidate, &G::blend, &G::forward, &G::backward_blend, &G::backward_reset_scaled,
           &G::backward_reset_inner, &G::backward},
          &recur::detail::sigmoid_row<T>,
          &recur::detail::tanh_row<T>};
}
}  // namespace RECUR_KERNEL_ISA

enum class KernelIsa { portable, avx2 };

// Each instruction set's table (cell_kernels_<isa>.cpp); avx2: null when recur was not
// built for x86-64.
template <class T>
const KernelTable<T>& portable_kernels();
template <class T>
const KernelTable<T>* avx2_kernels();

// The table of `isa`, or null when this build or this CPU has none.
template <class T>
const KernelTable<T>* kernels_for(KernelIsa isa);

// The instruction set in use: the fastest the CPU runs, unless RECUR_CPU_KERNELS=portable.
KernelIsa kernel_isa();
// Switches every later kernel call to `isa` (tests compare both); false, and no change,
// when that table is missing. Not for use while kernels run on other threads.
bool use_kernel_isa(KernelIsa isa);

// The table in use.
template <class T>
const KernelTable<T>& kernels() {
  return *kernels_for<T>(kernel_isa());
}

}  // namespace recur::nn::detail
