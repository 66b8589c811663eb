#pragma once
// Comparisons and selection. Comparisons give masks: tensors of the operands' dtype holding
// 1 where the relation holds and 0 elsewhere; they carry no gradient (on Vars the result is
// a constant). where(mask, a, b) picks a where mask != 0, else b, and is differentiable in
// a and b.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/declare.hpp>

namespace recur {

RECUR_DECLARE_BINARY_OPS(equal, not_equal, less, less_equal, greater, greater_equal)

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b);
Var where(const Var& mask, const Var& a, const Var& b);

}  // namespace recur
