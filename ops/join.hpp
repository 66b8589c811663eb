#pragma once
// Joining tensors and cutting them apart: concat, stack, split. Inputs of concat and stack
// must share one dtype and agree on every axis but the joined one (ShapeError naming the
// input and both shapes); an empty list is a ValueError. Axes may be negative.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// The inputs one after the other along an existing `axis`. (A std::vector converts to the
// span; the initializer_list forms take `concat({a, b}, 1)`.)
Tensor concat(std::span<const Tensor> xs, std::int64_t axis = 0);
Var concat(std::span<const Var> xs, std::int64_t axis = 0);
Tensor concat(std::initializer_list<Tensor> xs, std::int64_t axis = 0);
Var concat(std::initializer_list<Var> xs, std::int64_t axis = 0);

// The inputs (all of one shape) along a new `axis` in [-rank-1, rank].
Tensor stack(std::span<const Tensor> xs, std::int64_t axis = 0);
Var stack(std::span<const Var> xs, std::int64_t axis = 0);
Tensor stack(std::initializer_list<Tensor> xs, std::int64_t axis = 0);
Var stack(std::initializer_list<Var> xs, std::int64_t axis = 0);

// Consecutive pieces along `axis` of the given sizes (>= 0, adding up to the axis length:
// ShapeError otherwise).
std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::span<const std::int64_t> sizes);
std::vector<Var> split(const Var& x, std::int64_t axis, std::span<const std::int64_t> sizes);
std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::initializer_list<std::int64_t> sizes);
std::vector<Var> split(const Var& x, std::int64_t axis, std::initializer_list<std::int64_t> sizes);
// n_equal pieces of equal size; ValueError unless n_equal >= 1 divides the axis length.
std::vector<Tensor> split(const Tensor& x, std::int64_t axis, std::int64_t n_equal);
std::vector<Var> split(const Var& x, std::int64_t axis, std::int64_t n_equal);

}  // namespace recur
