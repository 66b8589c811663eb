#pragma once
// Elementwise functions of one floating tensor: exp, log, sqrt, abs, tanh, sigmoid, relu,
// softplus, clip.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

#define RECUR_DECLARE_UNARY(fn) \
  Tensor fn(const Tensor& x);   \
  Var fn(const Var& x);
RECUR_DECLARE_UNARY(exp)
RECUR_DECLARE_UNARY(log)
RECUR_DECLARE_UNARY(sqrt)
RECUR_DECLARE_UNARY(abs)
RECUR_DECLARE_UNARY(tanh)
RECUR_DECLARE_UNARY(sigmoid)
RECUR_DECLARE_UNARY(relu)
RECUR_DECLARE_UNARY(softplus)  // log(1 + exp(x)), computed without overflow
#undef RECUR_DECLARE_UNARY

// min(max(x, lo), hi); the gradient passes where lo <= x <= hi.
Tensor clip(const Tensor& x, double lo, double hi);
Var clip(const Var& x, double lo, double hi);

}  // namespace recur
