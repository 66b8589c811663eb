#pragma once
// Elementwise kernels with NumPy broadcasting, shared by every elementwise op.
#include <array>
#include <string_view>
#include <type_traits>

#include <recur/core/strided_loop.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// Throws DTypeError unless a and b have the same dtype.
void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b,
                      std::string_view a_name = "a", std::string_view b_name = "b");

// out[i] = f(a[i]) with T the element type of a (and out).
template <class T, class F>
Tensor unary_map(const Tensor& a, F f) {
  Tensor out = Tensor::empty(a.shape(), a.dtype());
  const T* x = a.data<T>();
  T* y = out.data<T>();
  const std::int64_t n = a.numel();
  for (std::int64_t i = 0; i < n; ++i) y[i] = f(x[i]);
  return out;
}

// out = f(a, b) elementwise, broadcast; a, b and out share the element type T.
template <class T, class R = T, class F>
Tensor binary_map(std::string_view op, const Tensor& a, const Tensor& b, F f) {
  const Shape shape = broadcast_shapes(op, a.shape(), b.shape());
  Tensor out = Tensor::empty(shape, dtype_of<R>());
  const T* x = a.data<T>();
  const T* y = b.data<T>();
  R* z = out.data<R>();
  if (a.shape() == b.shape()) {
    const std::int64_t n = out.numel();
    for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], y[i]);
  } else if (b.numel() == 1 && a.shape() == shape) {
    const T s = y[0];
    const std::int64_t n = out.numel();
    for (std::int64_t i = 0; i < n; ++i) z[i] = f(x[i], s);
  } else if (a.numel() == 1 && b.shape() == shape) {
    const T s = x[0];
    const std::int64_t n = out.numel();
    for (std::int64_t i = 0; i < n; ++i) z[i] = f(s, y[i]);
  } else {
    const std::array<Shape, 3> strides{broadcast_strides(a.shape(), shape),
                                       broadcast_strides(b.shape(), shape), contiguous_strides(shape)};
    for_each_run(shape, strides, [&](const auto& off, std::int64_t n, const auto& st) {
      for (std::int64_t j = 0; j < n; ++j)
        z[off[2] + j * st[2]] = f(x[off[0] + j * st[0]], y[off[1] + j * st[1]]);
    });
  }
  return out;
}

// out = f(a, b, c) elementwise, broadcast over all three (used by where and clip).
template <class T, class F>
Tensor ternary_map(std::string_view op, const Tensor& a, const Tensor& b, const Tensor& c, F f) {
  const Shape shape = broadcast_shapes(op, broadcast_shapes(op, a.shape(), b.shape()), c.shape());
  Tensor out = Tensor::empty(shape, b.dtype());
  const std::array<Shape, 4> strides{broadcast_strides(a.shape(), shape), broadcast_strides(b.shape(), shape),
                                     broadcast_strides(c.shape(), shape), contiguous_strides(shape)};
  dispatch(a.dtype(), [&]<class M>() {
    const M* x = a.data<M>();
    const T* y = b.data<T>();
    const T* w = c.data<T>();
    T* z = out.data<T>();
    for_each_run(shape, strides, [&](const auto& off, std::int64_t n, const auto& st) {
      for (std::int64_t j = 0; j < n; ++j)
        z[off[3] + j * st[3]] = f(x[off[0] + j * st[0]], y[off[1] + j * st[1]], w[off[2] + j * st[2]]);
    });
  });
  return out;
}

// A combine that can also merge two partial results (sum_combine's).
template <class F, class Acc>
concept MergesPartials = requires(const F& combine, Acc acc) { combine.merge(acc, acc); };

// Folds a run of n elements (stride apart) into acc. A combine that can merge two partial
// results (sum_combine) folds into eight independent partials, so the additions pipeline and
// vectorise instead of waiting on one another; other combines fold left to right.
template <class Acc, class T, class F>
Acc reduce_run(Acc acc, const T* x, std::int64_t n, std::int64_t stride, T init, F combine) {
  std::int64_t j = 0;
  if constexpr (MergesPartials<F, Acc>) {
    constexpr int kPartials = 8;
    if (n >= 2 * kPartials) {
      std::array<Acc, kPartials> part;
      part.fill(Acc(init));
      for (; j + kPartials <= n; j += kPartials)
        for (int p = 0; p < kPartials; ++p) part[p] = combine(part[p], x[(j + p) * stride]);
      for (int p = 0; p < kPartials; ++p) acc = combine.merge(acc, part[p]);
    }
  }
  for (; j < n; ++j) acc = combine(acc, x[j * stride]);
  return acc;
}

// Reduces `a` onto `out_shape` (same rank, size 1 on reduced axes) with `combine`, starting
// from `init`. sum, max and sum_to are this loop with different combine/init.
// combine(acc, x) may return a wider type than T (see sum_combine): runs accumulate in it.
template <class T, class F>
Tensor reduce_to_shape(const Tensor& a, const Shape& out_shape, T init, F combine) {
  using Acc = decltype(combine(init, init));
  Tensor out = Tensor::empty(out_shape, a.dtype());
  T* z = out.data<T>();
  const std::int64_t m = out.numel();
  for (std::int64_t i = 0; i < m; ++i) z[i] = init;
  const T* x = a.data<T>();
  const std::array<Shape, 2> strides{contiguous_strides(a.shape()), broadcast_strides(out_shape, a.shape())};
  for_each_run(a.shape(), strides, [&](const auto& off, std::int64_t n, const auto& st) {
    if (st[1] == 0) {
      z[off[1]] = static_cast<T>(reduce_run<Acc>(Acc(z[off[1]]), x + off[0], n, st[0], init, combine));
    } else {
      for (std::int64_t j = 0; j < n; ++j)
        z[off[1] + j * st[1]] = static_cast<T>(combine(z[off[1] + j * st[1]], x[off[0] + j * st[0]]));
    }
  });
  return out;
}

// Addition for sums: float32 runs add in double, so a sum over millions of elements keeps
// float32's precision instead of losing ~1e-3 to rounding.
template <class T>
auto sum_combine() {
  using Wide = std::conditional_t<std::is_same_v<T, float>, double, T>;
  struct Add {
    Wide operator()(Wide acc, T v) const { return acc + static_cast<Wide>(v); }
    Wide merge(Wide acc, Wide partial) const { return acc + partial; }
  };
  return Add{};
}

}  // namespace recur

namespace recur {
// a + b with broadcasting; the kernel behind the add op and gradient accumulation.
Tensor add_tensors(std::string_view op, const Tensor& a, const Tensor& b);
// acc += g where acc's buffer may be reused: in place when nobody else holds it and the
// shapes match, otherwise a fresh sum. Used to accumulate gradients.
void accumulate_into(Tensor& acc, const Tensor& g);
// The same for a g given away: taken where acc is undefined (a first share), and where acc's
// buffer is held elsewhere (a view of an output's gradient) and g's is not, the sum acc + g is
// written into g's buffer instead of a fresh one (each element added in the same order: the
// same bits).
void accumulate_into(Tensor& acc, Tensor&& g);
}  // namespace recur
