#pragma once
// Internal to the indexing and joining ops: the [outer, n, inner] view of a tensor around
// one axis, the row copy/scatter kernels built on it, and the checks of axes and indices.
#include <algorithm>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include <recur/core/creation.hpp>
#include <recur/ops/define.hpp>

namespace recur::detail {

// slice(x, axis, start, stop, step)'s op, for code that records ops from a program (a
// captured loop step cutting a merged product apart, ops/scan/step_rewrite.cpp).
OpBox slice_op(std::int64_t axis, std::int64_t start, std::int64_t stop, std::int64_t step = 1);

// A shape seen as [outer, n, inner] around `axis`: element (o, j, i) is at (o * n + j) * inner + i.
struct AxisBlocks {
  std::int64_t outer = 1, n = 1, inner = 1;
  AxisBlocks(const Shape& s, std::int64_t axis) : n(s[axis]) {
    for (std::int64_t k = 0; k < axis; ++k) outer *= s[k];
    for (auto k = static_cast<std::size_t>(axis) + 1; k < s.size(); ++k) inner *= s[k];
  }
};

// out[o, j, :] = x[o, pos(j), :] for j < count, with x seen as `b` and out (of out_shape) as
// [b.outer, count, b.inner]. slice, index and take are this loop with different pos.
template <class Pos>
Tensor select_rows(const Tensor& x, const AxisBlocks& b, std::int64_t count, const Shape& out_shape, Pos pos) {
  Tensor out = Tensor::empty(out_shape, x.dtype());
  dispatch(x.dtype(), [&]<class T>() {
    const T* src = x.data<T>();
    T* dst = out.data<T>();
    for (std::int64_t o = 0; o < b.outer; ++o)
      for (std::int64_t j = 0; j < count; ++j, dst += b.inner)
        std::copy_n(src + (o * b.n + pos(j)) * b.inner, b.inner, dst);
  });
  return out;
}

// The adjoint of select_rows, in place: acc (of out_shape, seen as `b`) gets
// acc[o, pos(j), :] += g[o, j, :]. Repeated positions add up. With `fresh` (distinct
// positions whose rows hold no gradient yet: GradSink::dense_rows) the rows are written.
template <class Pos>
void scatter_add_rows_into(Tensor& acc, const Tensor& g, const AxisBlocks& b, std::int64_t count, Pos pos,
                           bool fresh = false) {
  dispatch(g.dtype(), [&]<class T>() {
    const T* src = g.data<T>();
    T* dst = acc.data<T>();
    for (std::int64_t o = 0; o < b.outer; ++o)
      for (std::int64_t j = 0; j < count; ++j, src += b.inner) {
        T* row = dst + (o * b.n + pos(j)) * b.inner;
        if (fresh) std::copy_n(src, b.inner, row);
        else
          for (std::int64_t i = 0; i < b.inner; ++i) row[i] += src[i];
      }
  });
}

// The same into fresh zeros of out_shape.
template <class Pos>
Tensor scatter_add_rows(const Tensor& g, const AxisBlocks& b, std::int64_t count, const Shape& out_shape, Pos pos) {
  Tensor out = zeros(out_shape, g.dtype());
  scatter_add_rows_into(out, g, b, count, pos);
  return out;
}

inline std::int64_t wrap_index(std::int64_t i, std::int64_t n) { return i < 0 ? i + n : i; }

// i in [-n, n) for n = shape[axis]; IndexError naming op, the bad value and the shape.
inline std::int64_t checked_index(std::string_view op, std::int64_t i, const Shape& shape, std::int64_t axis) {
  const std::int64_t n = shape[axis];
  if (i < -n || i >= n)
    fail<IndexError>(op, "index ", i, " is out of range [", -n, ", ", n, ") for axis ", axis,
                     " of argument 'x' of shape ", to_string(shape));
  return wrap_index(i, n);
}

// int64 `indices`, every one valid along `axis` of a tensor of shape x_shape.
inline void check_indices(std::string_view op, const Tensor& indices, const Shape& x_shape, std::int64_t axis) {
  if (indices.dtype() != DType::int64)
    fail<DTypeError>(op, "argument 'indices' of shape ", to_string(indices.shape()), " must be int64, got ",
                     indices.dtype(), " (argument 'x' of shape ", to_string(x_shape), ")");
  const std::int64_t* p = indices.data<std::int64_t>();
  for (std::int64_t j = 0, m = indices.numel(); j < m; ++j) checked_index(op, p[j], x_shape, axis);
}

}  // namespace recur::detail
