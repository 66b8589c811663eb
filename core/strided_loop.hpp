#pragma once
// One loop for every broadcasting kernel: walks a shape with N operands, each with its own
// element strides (0 on broadcast axes), and hands the body runs of the innermost axis.
// Elementwise ops, reductions (output stride 0 on reduced axes) and sum_to all use it.
#include <array>
#include <cstdint>
#include <utility>

#include <recur/core/shape.hpp>

namespace recur {

// Drops size-1 axes and merges each axis into the next one when every operand steps over
// both as over one axis, so [T, 1, 32] contiguous is one run of 32T elements: longer runs
// vectorise and pay the odometer once instead of per row.
template <std::size_t N>
void coalesce_axes(Shape& shape, std::array<Shape, N>& strides) {
  Shape merged_shape;
  std::array<Shape, N> merged;
  for (std::size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 1) continue;
    bool joins = !merged_shape.empty();
    for (std::size_t k = 0; k < N && joins; ++k) joins = merged[k].back() == strides[k][d] * shape[d];
    if (joins) {
      merged_shape.back() *= shape[d];
      for (std::size_t k = 0; k < N; ++k) merged[k].back() = strides[k][d];
    } else {
      merged_shape.push_back(shape[d]);
      for (std::size_t k = 0; k < N; ++k) merged[k].push_back(strides[k][d]);
    }
  }
  shape = std::move(merged_shape);
  strides = std::move(merged);
}

// body(offsets, n, inner_strides): operand k's elements at offsets[k] + j * inner_strides[k]
// for j in [0, n). Runs follow the logical (row-major) order of `shape`.
template <std::size_t N, class Body>
void for_each_run(const Shape& full_shape, const std::array<Shape, N>& full_strides, Body&& body) {
  for (auto d : full_shape)
    if (d == 0) return;
  Shape shape = full_shape;
  std::array<Shape, N> strides = full_strides;
  coalesce_axes(shape, strides);
  const std::size_t rank = shape.size();
  std::array<std::int64_t, N> offsets{};
  std::array<std::int64_t, N> inner{};
  if (rank == 0) {
    body(offsets, std::int64_t{1}, inner);
    return;
  }
  for (std::size_t k = 0; k < N; ++k) inner[k] = strides[k][rank - 1];
  const std::int64_t n = shape[rank - 1];
  Shape counter(rank, 0);
  while (true) {
    body(offsets, n, inner);
    // Advance the odometer over the outer axes.
    std::size_t axis = rank - 1;
    while (true) {
      if (axis == 0) return;
      --axis;
      ++counter[axis];
      for (std::size_t k = 0; k < N; ++k) offsets[k] += strides[k][axis];
      if (counter[axis] < shape[axis]) break;
      for (std::size_t k = 0; k < N; ++k) offsets[k] -= strides[k][axis] * shape[axis];
      counter[axis] = 0;
    }
  }
}

}  // namespace recur
