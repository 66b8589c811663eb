// take and gather: reading at int64 indices, and their scatter-add gradients (each the
// other's adjoint: the gradient of a scatter is the take/gather again).
#include <recur/ops/indexing.hpp>

#include <array>

#include <recur/core/creation.hpp>
#include <recur/ops/indexing_detail.hpp>

namespace recur {
namespace {

using detail::AxisBlocks;

// x.shape[:axis] + indices.shape + x.shape[axis+1:]
Shape taken_shape(const Shape& x, std::int64_t axis, const Shape& indices) {
  Shape out(x.begin(), x.begin() + axis);
  out.insert(out.end(), indices.begin(), indices.end());
  out.insert(out.end(), x.begin() + axis + 1, x.end());
  return out;
}

// Take's and gather's gradients are scatters (TakeScatter, GatherScatter): added into the
// input's accumulated gradient in place in plain backward, recorded as an op otherwise.
template <class Scatter, class V>
Grads<V> scatter_gradient(const BackwardArgs<V>& a, const Scatter& scatter) {
  Grads<V> g(2);
  if (!add_in_place(a, 0, [&](Tensor& acc) { scatter.add_into(acc, value_of(a.grad), value_of(a.inputs[1])); }))
    g[0] = apply_op(scatter, a.grad, a.inputs[1]);
  return g;
}

// A scatter's forward: g added into zeros of the scattered-into shape.
template <class Scatter>
Tensor scatter_into_zeros(const Scatter& scatter, const Shape& shape, const Tensor& g, const Tensor& indices) {
  Tensor acc = zeros(shape, g.dtype());
  scatter.add_into(acc, g, indices);
  return acc;
}

// The gradient of take: g's rows added into zeros whose `axis` has size n (repeated
// indices accumulate).
struct TakeScatter {
  static constexpr std::string_view name = "take_backward";
  std::int64_t axis, n;  // axis is normalized
  OpAttributes attributes() const { return {{"axis", axis}, {"size", n}}; }
  // acc (the shape of take's x) += g at the taken positions.
  void add_into(Tensor& acc, const Tensor& g, const Tensor& indices) const {
    const std::int64_t* p = indices.data<std::int64_t>();
    detail::scatter_add_rows_into(acc, g, AxisBlocks(acc.shape(), axis), indices.numel(),
                                  [&](std::int64_t j) { return detail::wrap_index(p[j], n); });
  }
  Tensor forward(const Tensor& g, const Tensor& indices) const {
    Shape out(g.shape().begin(), g.shape().begin() + axis);
    out.push_back(n);
    out.insert(out.end(), g.shape().begin() + axis + indices.rank(), g.shape().end());
    return scatter_into_zeros(*this, out, g, indices);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    Grads<V> g(2);
    if (a.needs_grad(0)) g[0] = take(a.grad, a.inputs[1], axis);
    return g;
  }
};

struct Take {
  static constexpr std::string_view name = "take";
  std::int64_t axis;
  OpAttributes attributes() const { return {{"axis", axis}}; }
  Tensor forward(const Tensor& x, const Tensor& indices) const {
    const std::int64_t ax = normalize_axis(name, axis, x.shape());
    detail::check_indices(name, indices, x.shape(), ax);
    const AxisBlocks b(x.shape(), ax);
    const std::int64_t* p = indices.data<std::int64_t>();
    return detail::select_rows(x, b, indices.numel(), taken_shape(x.shape(), ax, indices.shape()),
                               [&](std::int64_t j) { return detail::wrap_index(p[j], b.n); });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if (!a.needs_grad(0)) return Grads<V>(2);
    const Shape& in = a.inputs[0].shape();
    const std::int64_t ax = normalize_axis(name, axis, in);
    return scatter_gradient(a, TakeScatter{ax, in[ax]});
  }
};

// Calls f(k, xk) for every element k of (contiguous) indices, with xk the element of a
// tensor of x_shape it addresses: the same coordinates, except indices[k] along axis.
template <class F>
void walk_gather(const Tensor& indices, const Shape& x_shape, std::int64_t axis, F f) {
  Shape x_strides = contiguous_strides(x_shape);
  const std::int64_t step = x_strides[axis], n = x_shape[axis];
  x_strides[axis] = 0;  // the position along axis comes from the index, not the coordinate
  const std::array<Shape, 2> strides{contiguous_strides(indices.shape()), x_strides};
  const std::int64_t* p = indices.data<std::int64_t>();
  for_each_run(indices.shape(), strides, [&](const auto& off, std::int64_t m, const auto& st) {
    for (std::int64_t j = 0; j < m; ++j) {
      const std::int64_t k = off[0] + j * st[0];
      f(k, off[1] + j * st[1] + detail::wrap_index(p[k], n) * step);
    }
  });
}

// The gradient of gather: g added into zeros of x's shape at the gathered positions.
struct GatherScatter {
  static constexpr std::string_view name = "gather_backward";
  std::int64_t axis;  // normalized
  Shape x_shape;
  OpAttributes attributes() const { return {{"axis", axis}, {"shape", ints_attribute(x_shape)}}; }
  // acc (of x_shape) += g at the gathered positions.
  void add_into(Tensor& acc, const Tensor& g, const Tensor& indices) const {
    dispatch(g.dtype(), [&]<class T>() {
      const T* src = g.data<T>();
      T* dst = acc.data<T>();
      walk_gather(indices, x_shape, axis, [&](std::int64_t k, std::int64_t xk) { dst[xk] += src[k]; });
    });
  }
  Tensor forward(const Tensor& g, const Tensor& indices) const {
    return scatter_into_zeros(*this, x_shape, g, indices);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    Grads<V> g(2);
    if (a.needs_grad(0)) g[0] = gather(a.grad, axis, a.inputs[1]);
    return g;
  }
};

struct Gather {
  static constexpr std::string_view name = "gather";
  std::int64_t axis;
  OpAttributes attributes() const { return {{"axis", axis}}; }
  static void check_shapes(const Tensor& x, const Tensor& indices, std::int64_t ax) {
    bool fits = indices.rank() == x.rank();
    for (std::int64_t d = 0; fits && d < x.rank(); ++d) fits = d == ax || indices.shape()[d] <= x.shape()[d];
    if (!fits)
      fail<ShapeError>(name, "argument 'indices' of shape ", to_string(indices.shape()),
                       " must have the rank of argument 'x' of shape ", to_string(x.shape()),
                       " and be no larger on every axis but axis ", ax);
  }
  Tensor forward(const Tensor& x, const Tensor& indices) const {
    const std::int64_t ax = normalize_axis(name, axis, x.shape());
    detail::check_indices(name, indices, x.shape(), ax);
    check_shapes(x, indices, ax);
    Tensor out = Tensor::empty(indices.shape(), x.dtype());
    dispatch(x.dtype(), [&]<class T>() {
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      walk_gather(indices, x.shape(), ax, [&](std::int64_t k, std::int64_t xk) { dst[k] = src[xk]; });
    });
    return out;
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if (!a.needs_grad(0)) return Grads<V>(2);
    const Shape& in = a.inputs[0].shape();
    return scatter_gradient(a, GatherScatter{normalize_axis(name, axis, in), in});
  }
};

}  // namespace

Tensor take(const Tensor& x, const Tensor& indices, std::int64_t axis) { return Take{axis}.forward(x, indices); }
Var take(const Var& x, const Var& indices, std::int64_t axis) { return record(Take{axis}, x, indices); }
Var take(const Var& x, const Tensor& indices, std::int64_t axis) {
  return transactional(x, [&] { return take(x, x.tape().constant(indices), axis); });
}

Tensor gather(const Tensor& x, std::int64_t axis, const Tensor& indices) { return Gather{axis}.forward(x, indices); }
Var gather(const Var& x, std::int64_t axis, const Var& indices) { return record(Gather{axis}, x, indices); }
Var gather(const Var& x, std::int64_t axis, const Tensor& indices) {
  return transactional(x, [&] { return gather(x, axis, x.tape().constant(indices)); });
}

}  // namespace recur
