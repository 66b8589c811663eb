#pragma once
// Internal: the arithmetic of a captured step's fused elementwise chains
// (ops/scan/elementwise_chain.cpp) over one block of elements, in the cell kernels' tables
// (cell_kernel_table_detail.hpp), so that it is compiled once per instruction set with them:
// plain IEEE operations in a fixed order and no contraction, so every copy gives the same
// bits as the ops the chain stands for. The chain calls one per instruction and block (a
// few thousand elements), so the call through the table costs nothing that shows.
#include <cstdint>

#include <recur/ops/kernels/kernel_isa_detail.hpp>

namespace recur::detail {

// What a binary instruction computes.
enum class ChainArith : std::uint8_t { add, sub, mul, div };

// How a rule turns the gradient g of an instruction's value into an operand's share, from
// the values u and v it reads.
enum class ChainGrad : std::uint8_t {
  copy,     // g                (a sum's operands, a difference's first)
  negate,   // -g               (a difference's second, neg)
  times,    // g u              (a product's operand: u the other one; exp: u = e^x)
  divide,   // g / u            (a quotient's numerator: u the divisor)
  divisor,  // -(g u / v)       (a quotient's divisor: u the quotient, v the divisor)
  tanh,     // g (1 - u u)      (u = tanh x)
  sigmoid,  // g u (1 - u)      (u = sigmoid x)
  relu,     // u > 0 ? g : 0    (u = x)
};

inline namespace RECUR_KERNEL_ISA {

// y[i] = a[i] op b[i] for i < n.
template <class T>
void chain_arith_row(ChainArith op, const T* a, const T* b, T* __restrict y, std::int64_t n) {
  switch (op) {
    case ChainArith::add: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i]; break;
    case ChainArith::sub: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i]; break;
    case ChainArith::mul: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i]; break;
    case ChainArith::div: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] / b[i]; break;
  }
}

// r[i] = c(i), or r[i] += c(i) when `accumulate`.
template <class T, class C>
[[gnu::always_inline]] inline void chain_put(bool accumulate, T* __restrict r, std::int64_t n, C c) {
  if (accumulate) {
    for (std::int64_t i = 0; i < n; ++i) r[i] += c(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i] = c(i);
  }
}

// r = (or +=) the operand's share of g by `rule` (ChainGrad), for i < n. r is none of g, u, v.
template <class T>
void chain_grad_row(ChainGrad rule, bool accumulate, const T* g, const T* u, const T* v, T* __restrict r,
                    std::int64_t n) {
  switch (rule) {
    case ChainGrad::copy: chain_put(accumulate, r, n, [g](std::int64_t i) { return g[i]; }); break;
    case ChainGrad::negate: chain_put(accumulate, r, n, [g](std::int64_t i) { return -g[i]; }); break;
    case ChainGrad::times: chain_put(accumulate, r, n, [g, u](std::int64_t i) { return g[i] * u[i]; }); break;
    case ChainGrad::divide: chain_put(accumulate, r, n, [g, u](std::int64_t i) { return g[i] / u[i]; }); break;
    case ChainGrad::divisor:
      chain_put(accumulate, r, n, [g, u, v](std::int64_t i) { return -(g[i] * u[i] / v[i]); });
      break;
    case ChainGrad::tanh:
      chain_put(accumulate, r, n, [g, u](std::int64_t i) { return g[i] * (T(1) - u[i] * u[i]); });
      break;
    case ChainGrad::sigmoid:
      chain_put(accumulate, r, n, [g, u](std::int64_t i) { return g[i] * u[i] * (T(1) - u[i]); });
      break;
    case ChainGrad::relu: chain_put(accumulate, r, n, [g, u](std::int64_t i) { return u[i] > 0 ? g[i] : T(0); }); break;
  }
}

}  // namespace RECUR_KERNEL_ISA
}  // namespace recur::detail
