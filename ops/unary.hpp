#pragma once
// Elementwise functions of one floating tensor: exp, log, sqrt, abs, tanh, sigmoid, relu,
// softplus (log(1 + exp(x)), computed without overflow), clip.
#include <cstdint>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/declare.hpp>

namespace recur {

RECUR_DECLARE_UNARY_OPS(exp, log, sqrt, abs, tanh, sigmoid, relu, softplus)

// min(max(x, lo), hi); the gradient passes where lo <= x <= hi.
Tensor clip(const Tensor& x, double lo, double hi);
Var clip(const Var& x, double lo, double hi);

namespace detail {
// tanh and sigmoid of n values exactly as the tanh and sigmoid ops compute them (their
// vectorised kernels), for code that fuses them with other elementwise work.
template <class T>
void tanh_values(const T* x, T* y, std::int64_t n);
template <class T>
void sigmoid_values(const T* x, T* y, std::int64_t n);
}  // namespace detail

}  // namespace recur
