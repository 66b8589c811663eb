#pragma once
// broadcast_to and its adjoint sum_to: the pair every broadcasting op's backward uses.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// x repeated along size-1 (or missing leading) axes to `shape` (NumPy rules).
Tensor broadcast_to(const Tensor& x, const Shape& shape);
Var broadcast_to(const Var& x, const Shape& shape);

// Sums x over the axes that broadcasting from `shape` to x.shape() would have expanded, so
// the result has `shape`. Returns x itself when the shapes already match.
Tensor sum_to(const Tensor& x, const Shape& shape);
Var sum_to(const Var& x, const Shape& shape);

}  // namespace recur
