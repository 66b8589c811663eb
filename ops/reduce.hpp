#pragma once
// Reductions over axes. An empty axis list reduces over all axes; keepdims keeps the
// reduced axes with size 1.
#include <initializer_list>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

#define RECUR_DECLARE_REDUCTION(fn)                                                 \
  Tensor fn(const Tensor& x, const Axes& axes = {}, bool keepdims = false);        \
  Var fn(const Var& x, const Axes& axes = {}, bool keepdims = false);
RECUR_DECLARE_REDUCTION(sum)
RECUR_DECLARE_REDUCTION(mean)
// Ties share the gradient equally.
RECUR_DECLARE_REDUCTION(max)
#undef RECUR_DECLARE_REDUCTION

}  // namespace recur
