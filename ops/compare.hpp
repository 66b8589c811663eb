#pragma once
// Comparisons and selection. Comparisons give masks: tensors of the operands' dtype holding
// 1 where the relation holds and 0 elsewhere; they carry no gradient (on Vars the result is
// a constant). where(mask, a, b) picks a where mask != 0, else b, and is differentiable in
// a and b.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

#define RECUR_DECLARE_COMPARISON(fn)           \
  Tensor fn(const Tensor& a, const Tensor& b); \
  Var fn(const Var& a, const Var& b);
RECUR_DECLARE_COMPARISON(equal)
RECUR_DECLARE_COMPARISON(not_equal)
RECUR_DECLARE_COMPARISON(less)
RECUR_DECLARE_COMPARISON(less_equal)
RECUR_DECLARE_COMPARISON(greater)
RECUR_DECLARE_COMPARISON(greater_equal)
#undef RECUR_DECLARE_COMPARISON

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b);
Var where(const Var& mask, const Var& a, const Var& b);

}  // namespace recur
