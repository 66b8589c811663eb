#pragma once
// Shapes (any rank, row-major) and the rules that relate them: broadcasting, axes.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include <recur/core/small_vector.hpp>

namespace recur {

// Most tensors have rank <= 4; larger ranks spill to the heap.
using Shape = boost::container::small_vector<std::int64_t, 4>;
using Axes = boost::container::small_vector<std::int64_t, 4>;

inline std::int64_t numel(const Shape& s) {
  std::int64_t n = 1;
  for (auto d : s) n *= d;
  return n;
}
std::string to_string(const Shape& s);
std::ostream& operator<<(std::ostream& o, const Shape& s);

// NumPy broadcasting of two shapes; throws ShapeError naming `op` and both arguments.
Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b,
                       std::string_view a_name = "a", std::string_view b_name = "b");

// Maps a possibly negative axis of a tensor of `shape` into [0, rank + extra_rank)
// (extra_rank = 1 for an axis to be inserted); AxisError naming op, arg and the shape.
std::int64_t normalize_axis(std::string_view op, std::int64_t axis, const Shape& shape,
                            std::string_view arg = "axis", std::int64_t extra_rank = 0);
// Normalizes and sorts; an empty list means "all axes". An axis named twice (3 and -1 of
// a rank-4 shape too) is an AxisError naming op, the axes and the shape.
Axes normalize_axes(std::string_view op, const Axes& axes, const Shape& shape);

// Row-major strides in elements; stride 0 where a size-1 axis is broadcast to `target`.
Shape broadcast_strides(const Shape& shape, const Shape& target);
Shape contiguous_strides(const Shape& shape);

}  // namespace recur
