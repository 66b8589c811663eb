#pragma once
// One loop for every broadcasting kernel: walks a shape with N operands, each with its own
// element strides (0 on broadcast axes), and hands the body runs of the innermost axis.
// Elementwise ops, reductions (output stride 0 on reduced axes) and sum_to all use it.
#include <array>
#include <cstdint>

#include <recur/core/shape.hpp>

namespace recur {

// body(offsets, n, inner_strides): operand k's elements at offsets[k] + j * inner_strides[k]
// for j in [0, n).
template <std::size_t N, class Body>
void for_each_run(const Shape& shape, const std::array<Shape, N>& strides, Body&& body) {
  const std::size_t rank = shape.size();
  std::array<std::int64_t, N> offsets{};
  std::array<std::int64_t, N> inner{};
  if (rank == 0) {
    body(offsets, std::int64_t{1}, inner);
    return;
  }
  for (auto d : shape)
    if (d == 0) return;
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
