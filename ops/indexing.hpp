#pragma once
// Reading parts of a tensor: slice, index, take, gather. Every axis may be negative
// (counted from the back) and so may every index. The gradients scatter back into zeros of
// the input's shape; take and gather add up the gradients of repeated indices.
#include <cstdint>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// x[..., start:stop:step, ...] along `axis`, as NumPy for step >= 1: negative start/stop
// count from the back and out-of-range bounds are clamped. ValueError for step < 1.
Tensor slice(const Tensor& x, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1);
Var slice(const Var& x, std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1);

// The sub-tensor at position i along `axis`, which is removed (rank - 1). IndexError when
// i is not in [-size, size). Along axis 0 (the x[t] of scan) it is a view: no copy.
Tensor index(const Tensor& x, std::int64_t axis, std::int64_t i);
Var index(const Var& x, std::int64_t axis, std::int64_t i);

// The slices of x at int64 `indices` (any shape) along `axis`: the result has shape
// x.shape[:axis] + indices.shape + x.shape[axis+1:]. Embedding lookup is take(W, ids).
Tensor take(const Tensor& x, const Tensor& indices, std::int64_t axis = 0);
Var take(const Var& x, const Var& indices, std::int64_t axis = 0);
// Indices as a constant on the tape of `x`.
Var take(const Var& x, const Tensor& indices, std::int64_t axis = 0);

// PyTorch's gather: out[i][j][k] = x[indices[i][j][k]][j][k] for axis 0 (likewise for the
// other axes). indices are int64 of x's rank, no larger than x on every other axis; the
// result has the shape of indices.
Tensor gather(const Tensor& x, std::int64_t axis, const Tensor& indices);
Var gather(const Var& x, std::int64_t axis, const Var& indices);
// Indices as a constant on the tape of `x`.
Var gather(const Var& x, std::int64_t axis, const Tensor& indices);

}  // namespace recur
