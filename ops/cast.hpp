#pragma once
// cast: a floating tensor in another floating dtype (float32 <-> float64), differentiable:
// the gradient is cast back to the input's dtype. A cast to the dtype x already has is x.
// DTypeError naming the dtypes for anything but float32 and float64 (integer tensors carry
// no gradient: Tensor::to converts them).
#include <recur/autodiff/var.hpp>
#include <recur/core/dtype.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

Tensor cast(const Tensor& x, DType dtype);
Var cast(const Var& x, DType dtype);

}  // namespace recur
