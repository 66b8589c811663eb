#pragma once
// Reductions over axes. An empty axis list reduces over all axes; keepdims keeps the
// reduced axes with size 1. An empty input sums to 0 and multiplies to 1; max and min of
// an empty input are a ShapeError (no identity).
#include <initializer_list>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

#define RECUR_DECLARE_REDUCTION(fn)                                                 \
  Tensor fn(const Tensor& x, const Axes& axes = {}, bool keepdims = false);        \
  Var fn(const Var& x, const Axes& axes = {}, bool keepdims = false);
RECUR_DECLARE_REDUCTION(sum)
RECUR_DECLARE_REDUCTION(mean)
RECUR_DECLARE_REDUCTION(prod)  // gradient exact where x has zeros (no division by x)
// max and min: NaN propagates (the result is NaN if any element is), as in NumPy. Ties
// share the gradient equally; a NaN result passes its gradient to the NaN elements.
RECUR_DECLARE_REDUCTION(max)
RECUR_DECLARE_REDUCTION(min)
#undef RECUR_DECLARE_REDUCTION

}  // namespace recur
