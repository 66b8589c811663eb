#pragma once
// Internal: the elementwise work of the mean squared error (ops/loss.cpp) over whole
// tensors, in the cell kernels' tables (cell_kernel_table_detail.hpp) so that it is compiled
// once per instruction set with them. An RNN's loss reads every output of the sequence (the
// RNN suite's M: 819,200 elements): compiled for the baseline (SSE2), its forward and
// backward took 8% of an RNN M training step's samples. Plain IEEE operations in a fixed
// order and no contraction: every table gives the same bits.
#include <cstdint>

#include <recur/ops/kernels/kernel_isa_detail.hpp>

namespace recur::detail {
inline namespace RECUR_KERNEL_ISA {

// The sum of (a[i] - b[i])^2 for i < n, in double (float32 too: a long sum in float would
// drift), as eight partial sums, element i into sum i mod 8, added in a fixed order at the
// end: the same bits on every run and in every table (eight doubles are one AVX-512 vector,
// two AVX2 ones), and no chain of dependent additions through the whole row.
template <class T>
double squared_difference_sum(const T* a, const T* b, std::int64_t n) {
  constexpr std::int64_t lanes = 8;
  double part[lanes] = {};
  auto add = [&](std::int64_t at, std::int64_t lane) {
    const double d = static_cast<double>(a[at]) - static_cast<double>(b[at]);
    part[lane] += d * d;
  };
  std::int64_t i = 0;
  for (; i + lanes <= n; i += lanes)
    for (std::int64_t j = 0; j < lanes; ++j) add(i + j, j);
  for (std::int64_t j = 0; i + j < n; ++j) add(i + j, j);
  return ((part[0] + part[1]) + (part[2] + part[3])) + ((part[4] + part[5]) + (part[6] + part[7]));
}

// out[i] = g (a[i] - b[i]) for i < n (out may be neither a nor b).
template <class T>
void scaled_difference(T g, const T* a, const T* b, T* __restrict out, std::int64_t n) {
  for (std::int64_t i = 0; i < n; ++i) out[i] = g * (a[i] - b[i]);
}

}  // namespace RECUR_KERNEL_ISA
}  // namespace recur::detail
