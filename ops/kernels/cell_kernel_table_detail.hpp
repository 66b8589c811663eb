#pragma once
// Internal: the elementwise kernels of the recurrent cells (cell_kernels_detail.hpp), the
// sigmoid and tanh rows (fast_math_detail.hpp), the fused chains' arithmetic
// (chain_kernels_detail.hpp) and the squared error's (loss_kernels_detail.hpp) as a table of
// function pointers, one table
// per instruction set they were compiled for:
//   portable: cell_kernels_portable.cpp, the target's baseline (SSE2 on x86-64);
//   avx2:     cell_kernels_avx2.cpp, compiled with -mavx2 on x86-64: the exp and select
//             loops vectorize 8 floats wide with AVX2's integer ops, about 2x faster
//             (bench/bench_cell_kernels.cpp);
//   avx512:   cell_kernels_avx512.cpp, compiled with AVX-512 (F, BW, DQ, VL: every AVX-512
//             CPU since Skylake-SP) and 512-bit vectors preferred: 16 floats wide.
// The files are compiled with -ffp-contract=off (CMakeLists.txt), so none contracts
// a * b + c into a fused multiply-add whatever -march a user builds with: the tables
// perform the same IEEE operations in the same order and give the same bits (a NaN's sign
// aside), so results do not depend on the CPU. Which table runs: cell_kernel_choice_detail.hpp.
//
// This header may include kernel headers only: cell_kernels_avx2.cpp includes it.
#include <cstdint>

#include <recur/ops/kernels/chain_kernels_detail.hpp>
#include <recur/ops/kernels/fast_math_detail.hpp>
#include <recur/ops/kernels/cell_kernels_detail.hpp>
#include <recur/ops/kernels/loss_kernels_detail.hpp>

namespace recur::nn::detail {

// The types are spelled out (not decltype of the kernels) so that they name nothing that
// differs between the files: the kernels' own names do (kernel_isa_detail.hpp).
template <class T>
struct KernelTable {
  using I = std::int64_t;
  struct Lstm {
    void (*activations)(const T* pre, T* act, I n);
    void (*cell_update)(const T* act, const T* c_prev, T* c, I n);
    void (*forward)(const T* pre, T* act, const T* c_prev, T* c, T* h, T* tanh_c, I n);
    void (*backward)(T* act, const T* c_prev, const T* c, const T* dh, T* dc, T* tanh_c, I n);
  } lstm;
  struct Rnn {
    void (*forward)(T* pre, I count, Nonlinearity act);
    void (*backward)(const T* h, const T* dh, T* dpre, I count, Nonlinearity act);
  } rnn;
  struct Gru {
    void (*reset_update)(const T* x, const T* hp, T* act, I n);
    void (*candidate)(const T* x, const T* hp_n, T* act, bool scaled, I n);
    void (*blend)(const T* act, const T* h, T* h_next, I n);
    void (*forward)(const T* x, const T* hp, const T* h, T* h_next, T* act, I n);
    void (*backward_blend)(T* act, const T* h, const T* dh_next, T* dh, I n);
    void (*backward_reset_scaled)(T* act, const T* hp_n, T* dhp_n, I n);
    void (*backward_reset_inner)(T* act, const T* d_rh, const T* h, T* dh, I n);
    void (*backward)(const T* x, const T* hp, const T* h, const T* dh_next, T* dx, T* dhp, T* dh, I n);
  } gru;
  void (*sigmoid_row)(const T* a, const T* b, T* out, I n);
  void (*tanh_row)(const T* a, T* out, I n);
  // A fused chain's arithmetic over a block (chain_kernels_detail.hpp).
  void (*chain_arith_row)(recur::detail::ChainArith op, const T* a, const T* b, T* y, I n);
  void (*chain_grad_row)(recur::detail::ChainGrad rule, bool accumulate, const T* g, const T* u, const T* v, T* r,
                         I n);
  void (*chain_grad_then_row)(recur::detail::ChainGrad first, recur::detail::ChainGrad then, bool accumulate,
                              const T* g, const T* u, const T* v, const T* w, T* r, I n);
  // The mean squared error's sum and gradient (loss_kernels_detail.hpp).
  double (*squared_difference_sum)(const T* a, const T* b, I n);
  void (*scaled_difference)(T g, const T* a, const T* b, T* out, I n);
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
          &recur::detail::tanh_row<T>,
          &recur::detail::chain_arith_row<T>,
          &recur::detail::chain_grad_row<T>,
          &recur::detail::chain_grad_then_row<T>,
          &recur::detail::squared_difference_sum<T>,
          &recur::detail::scaled_difference<T>};
}
}  // namespace RECUR_KERNEL_ISA

// Each instruction set's table (cell_kernels_<isa>.cpp). avx2, avx512: null when recur
// was not built for x86-64; call one only on a CPU that runs its instruction set (its file
// is compiled for it).
template <class T>
const KernelTable<T>& portable_kernels();
template <class T>
const KernelTable<T>* avx2_kernels();
template <class T>
const KernelTable<T>* avx512_kernels();

// Defines `function`, the table of the file it is in, or null where the file was not built
// for its instruction set (`built` false): cell_kernels_avx2.cpp and cell_kernels_avx512.cpp.
#define RECUR_ISA_KERNEL_TABLE(function, built)                                   \
  template <class T>                                                              \
  const KernelTable<T>* function() {                                              \
    if constexpr (built) {                                                        \
      static constexpr KernelTable<T> table = this_isa_kernels<T>();              \
      return &table;                                                              \
    } else {                                                                      \
      return nullptr;                                                             \
    }                                                                             \
  }                                                                               \
  template const KernelTable<float>* function<float>();                           \
  template const KernelTable<double>* function<double>();

}  // namespace recur::nn::detail
