#pragma once
// Shapes (any rank, row-major) and the rules that relate them: broadcasting, axes.
#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <span>
#include <string>
#include <string_view>

#include <recur/core/dims.hpp>

namespace recur {

// Sizes per axis, and lists of axes (Dims: rank <= 4 inline, larger ranks on the heap).
using Shape = Dims;
using Axes = Dims;

namespace detail {
[[noreturn]] void fail_numel(std::string_view op, const Shape& s);
}

// The number of elements of a tensor of shape `s`. ShapeError naming `op` and the shape if
// a size is negative, or if the sizes other than 0 multiply past int64 (as NumPy refuses
// such shapes, empty or not: their strides would overflow), never a wrapped count.
inline std::int64_t numel(const Shape& s, std::string_view op = "shape") {
  std::int64_t n = 1;
  bool empty = false;
  for (auto d : s) {
    if (d < 0 || (d > 0 && __builtin_mul_overflow(n, d, &n))) detail::fail_numel(op, s);
    empty = empty || d == 0;
  }
  return empty ? 0 : n;
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
