#pragma once
// Ops that rearrange elements without computing: reshape, squeeze, unsqueeze, transpose,
// permute. reshape, squeeze and unsqueeze share the buffer (no copy).
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// One entry of `shape` may be -1: it is inferred from the element count.
Tensor reshape(const Tensor& x, const Shape& shape);
Var reshape(const Var& x, const Shape& shape);
// Drops `axis`, which must have size 1.
Tensor squeeze(const Tensor& x, std::int64_t axis);
Var squeeze(const Var& x, std::int64_t axis);
// Inserts a size-1 axis at `axis` (in [-rank-1, rank]).
Tensor unsqueeze(const Tensor& x, std::int64_t axis);
Var unsqueeze(const Var& x, std::int64_t axis);
// Axes in the order `dims` (a permutation of 0..rank-1, negatives allowed).
Tensor permute(const Tensor& x, const Axes& dims);
Var permute(const Var& x, const Axes& dims);
// Swaps two axes; by default the last two (the matrix transpose).
Tensor transpose(const Tensor& x, std::int64_t axis0 = -2, std::int64_t axis1 = -1);
Var transpose(const Var& x, std::int64_t axis0 = -2, std::int64_t axis1 = -1);

}  // namespace recur
