#include <recur/ops/cast.hpp>

#include <recur/ops/define.hpp>

namespace recur {
namespace {

void check_floating(DType from, DType to) {
  if (!is_floating(from) || !is_floating(to))
    fail<DTypeError>("cast", "argument 'x' is ", from, " and the target ", to,
                     "; cast converts between float32 and float64 (Tensor::to converts integers, without gradients)");
}

struct Cast {
  static constexpr std::string_view name = "cast";
  DType dtype;
  OpAttributes attributes() const { return {{"dtype", std::string(name_of(dtype))}}; }
  Tensor forward(const Tensor& x) const {
    check_floating(x.dtype(), dtype);
    return x.to(dtype);
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {cast(a.grad, a.inputs[0].dtype())};
  }
};

}  // namespace

Tensor cast(const Tensor& x, DType dtype) { return Cast{dtype}.forward(x); }
Var cast(const Var& x, DType dtype) {
  check_floating(x.dtype(), dtype);
  if (x.dtype() == dtype) return x;
  return record(Cast{dtype}, x);
}

}  // namespace recur
