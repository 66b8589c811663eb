#include <recur/ops/broadcast.hpp>

#include <algorithm>

#include <recur/ops/define.hpp>

namespace recur {
namespace {

// shape padded with leading 1s to `rank` axes.
Shape left_pad(const Shape& shape, std::size_t rank) {
  Shape out(rank - shape.size(), 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return out;
}

// The one parameter of broadcast_to and sum_to: the shape they go to.
struct ToShape {
  Shape shape;
  OpAttributes attributes() const { return {{"shape", ints_attribute(shape)}}; }
};

struct BroadcastTo : ToShape {
  static constexpr std::string_view name = "broadcast_to";
  Tensor forward(const Tensor& x) const {
    if (x.shape() == shape) return x;
    if (broadcast_shapes(name, x.shape(), shape, "x", "shape") != shape)
      fail<ShapeError>(name, "argument 'x' of shape ", to_string(x.shape()), " cannot be broadcast to shape ",
                       to_string(shape));
    Tensor out = Tensor::empty(shape, x.dtype());
    dispatch(x.dtype(), [&]<class T>() {
      const T* src = x.data<T>();
      T* dst = out.data<T>();
      const std::array<Shape, 2> strides{broadcast_strides(x.shape(), shape), contiguous_strides(shape)};
      // The destination is contiguous, so each run is a fill (broadcast axis) or a copy.
      for_each_run(shape, strides, [&](const auto& off, std::int64_t n, const auto& st) {
        if (st[0] == 0)
          std::fill_n(dst + off[1], n, src[off[0]]);
        else
          for (std::int64_t j = 0; j < n; ++j) dst[off[1] + j] = src[off[0] + j * st[0]];
      });
    });
    return out;
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {sum_to(a.grad, a.inputs[0].shape())};
  }
};

struct SumTo : ToShape {
  static constexpr std::string_view name = "sum_to";
  Tensor forward(const Tensor& x) const {
    if (x.shape() == shape) return x;
    if (shape.size() > x.shape().size() || broadcast_shapes(name, shape, x.shape(), "shape", "x") != x.shape())
      fail<ShapeError>(name, "argument 'x' of shape ", to_string(x.shape()), " cannot be summed to shape ",
                       to_string(shape));
    const Shape keep = left_pad(shape, x.shape().size());
    return dispatch(x.dtype(), [&]<class T>() {
      return reduce_to_shape<T>(x, keep, T(0), sum_combine<T>());
    }).view(shape);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {broadcast_to(a.grad, a.inputs[0].shape())};
  }
};

}  // namespace

Tensor broadcast_to(const Tensor& x, const Shape& shape) {
  return x.shape() == shape ? x : BroadcastTo{{shape}}.forward(x);
}
Var broadcast_to(const Var& x, const Shape& shape) {
  return x.shape() == shape ? x : record(BroadcastTo{{shape}}, x);
}
Tensor sum_to(const Tensor& x, const Shape& shape) { return x.shape() == shape ? x : SumTo{{shape}}.forward(x); }
Var sum_to(const Var& x, const Shape& shape) { return x.shape() == shape ? x : record(SumTo{{shape}}, x); }

}  // namespace recur
