#include <recur/ops/compare.hpp>

#include <functional>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/define.hpp>

namespace recur {
namespace {

template <class Rel>
Tensor compare(std::string_view op, const Tensor& a, const Tensor& b) {
  check_same_dtype(op, a, b);
  return dispatch(a.dtype(), [&]<class T>() {
    return binary_map<T>(op, a, b, [](T x, T y) { return static_cast<T>(Rel{}(x, y) ? 1 : 0); });
  });
}

struct Where {
  static constexpr std::string_view name = "where";
  Tensor forward(const Tensor& mask, const Tensor& a, const Tensor& b) const {
    check_same_dtype(name, a, b, "a", "b");
    return dispatch(a.dtype(), [&]<class T>() {
      return ternary_map<T>(name, mask, a, b, [](auto m, T x, T y) { return m != 0 ? x : y; });
    });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& args) const {
    const Tensor& m = value_of(args.inputs[0]);
    const Tensor& gv = value_of(args.grad);
    // The mask as 0/1 in the gradient's dtype, broadcast to the output's shape.
    const Tensor pick = not_equal(m.to(gv.dtype()), scalar_like(gv, 0.0));
    Grads<V> g(3);
    if (args.needs_grad(1)) g[1] = sum_to(mul(args.grad, lift(args.grad, pick)), args.inputs[1].shape());
    if (args.needs_grad(2))
      g[2] = sum_to(mul(args.grad, lift(args.grad, sub(scalar_like(pick, 1.0), pick))), args.inputs[2].shape());
    return g;
  }
};

// A comparison on Vars: its mask is a constant for autodiff (record_without_gradient).
template <class Rel, const std::string_view& Name>
struct Comparison {
  static constexpr std::string_view name = Name;  // the function's (equal, less, ...)
  Tensor forward(const Tensor& a, const Tensor& b) const { return compare<Rel>(name, a, b); }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>&) const {
    return Grads<V>(2);
  }
};

}  // namespace

#define RECUR_DEFINE_COMPARISON(fn, Rel)                                                         \
  namespace {                                                                                    \
  constexpr std::string_view fn##_name = #fn;                                                    \
  }                                                                                              \
  Tensor fn(const Tensor& a, const Tensor& b) { return compare<Rel>(#fn, a, b); }                \
  Var fn(const Var& a, const Var& b) { return record_without_gradient(Comparison<Rel, fn##_name>{}, a, b); }
RECUR_DEFINE_COMPARISON(equal, std::equal_to<>)
RECUR_DEFINE_COMPARISON(not_equal, std::not_equal_to<>)
RECUR_DEFINE_COMPARISON(less, std::less<>)
RECUR_DEFINE_COMPARISON(less_equal, std::less_equal<>)
RECUR_DEFINE_COMPARISON(greater, std::greater<>)
RECUR_DEFINE_COMPARISON(greater_equal, std::greater_equal<>)
#undef RECUR_DEFINE_COMPARISON

Tensor where(const Tensor& mask, const Tensor& a, const Tensor& b) { return Where{}.forward(mask, a, b); }
Var where(const Var& mask, const Var& a, const Var& b) { return record(Where{}, mask, a, b); }

}  // namespace recur
