#pragma once
// Internal: the arithmetic of a captured step's fused elementwise chains
// (ops/scan/elementwise_chain.cpp) over one block of elements, in the cell kernels' tables
// (cell_kernel_table_detail.hpp), so that it is compiled once per instruction set with them:
// plain IEEE operations in a fixed order and no contraction, so every copy gives the same
// bits as the ops the chain stands for. The chain calls one per instruction and block (a
// few thousand elements), so the call through the table costs nothing that shows.
#include <cstdint>
#include <type_traits>

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

// f(std::integral_constant<ChainGrad, rule>{}): a rule as a constant, so that the loop it
// picks is compiled (and vectorised) for that rule alone.
template <class F>
[[gnu::always_inline]] inline void with_rule(ChainGrad rule, F&& f) {
  using C = ChainGrad;
  switch (rule) {
    case C::copy: f(std::integral_constant<C, C::copy>{}); break;
    case C::negate: f(std::integral_constant<C, C::negate>{}); break;
    case C::times: f(std::integral_constant<C, C::times>{}); break;
    case C::divide: f(std::integral_constant<C, C::divide>{}); break;
    case C::divisor: f(std::integral_constant<C, C::divisor>{}); break;
    case C::tanh: f(std::integral_constant<C, C::tanh>{}); break;
    case C::sigmoid: f(std::integral_constant<C, C::sigmoid>{}); break;
    case C::relu: f(std::integral_constant<C, C::relu>{}); break;
  }
}

// The share of gradient element g by `rule` (ChainGrad), reading u[i] and v[i].
template <ChainGrad rule, class T>
[[gnu::always_inline]] inline T chain_share(T g, const T* u, const T* v, std::int64_t i) {
  using C = ChainGrad;
  if constexpr (rule == C::copy) return g;
  else if constexpr (rule == C::negate) return -g;
  else if constexpr (rule == C::times) return g * u[i];
  else if constexpr (rule == C::divide) return g / u[i];
  else if constexpr (rule == C::divisor) return -(g * u[i] / v[i]);
  else if constexpr (rule == C::tanh) return g * (T(1) - u[i] * u[i]);
  else if constexpr (rule == C::sigmoid) return g * u[i] * (T(1) - u[i]);
  else return u[i] > 0 ? g : T(0);  // relu
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
  with_rule(rule, [&](auto R) {
    chain_put(accumulate, r, n, [&](std::int64_t i) { return chain_share<R()>(g[i], u, v, i); });
  });
}

// Two rules in one pass: r = (or +=) the share by `then` (reading w) of the share of g by
// `first` (reading u, v), for i < n: a value whose one share is `first`'s hands it on by its
// own rule `then` at once, without a register in between. The share by `first` is rounded
// to T as it would be in that register, so the bits are those of the two passes. r is none
// of g, u, v, w.
template <class T>
void chain_grad_then_row(ChainGrad first, ChainGrad then, bool accumulate, const T* g, const T* u, const T* v,
                         const T* w, T* __restrict r, std::int64_t n) {
  with_rule(first, [&](auto R1) {
    with_rule(then, [&](auto R2) {
      // `then` is a one-operand instruction's rule: neg's, exp's (times), tanh's, sigmoid's, relu's.
      if constexpr (R2() != ChainGrad::copy && R2() != ChainGrad::divide && R2() != ChainGrad::divisor) {
        chain_put(accumulate, r, n, [&](std::int64_t i) {
          const T share = chain_share<R1()>(g[i], u, v, i);
          return chain_share<R2()>(share, w, static_cast<const T*>(nullptr), i);
        });
      }
    });
  });
}

}  // namespace RECUR_KERNEL_ISA
}  // namespace recur::detail
