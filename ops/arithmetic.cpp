#include <recur/ops/arithmetic.hpp>

#include <cmath>

#include <recur/core/creation.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/unary.hpp>

namespace recur {
namespace {

// The shared shape of every broadcasting binary op: forward applies F::apply elementwise
// on floating operands; backward is F::grads, reduced back to each operand's shape.
template <class F>
struct Binary {
  static constexpr std::string_view name = F::name;
  static constexpr bool elementwise = true;
  Tensor forward(const Tensor& a, const Tensor& b) const {
    check_same_dtype(name, a, b);
    return dispatch_floating(name, a.dtype(), [&]<class T>() {
      return binary_map<T>(name, a, b, [](T x, T y) { return F::apply(x, y); });
    });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& args) const {
    const V& a = args.inputs[0];
    const V& b = args.inputs[1];
    Grads<V> g(2);
    if (args.needs_grad(0)) g[0] = sum_to(F::grad_a(args.grad, a, b, args.output), a.shape());
    if (args.needs_grad(1)) g[1] = sum_to(F::grad_b(args.grad, a, b, args.output), b.shape());
    return g;
  }
  // A sum's or a difference's rule reads shapes only (F::reads_values = false).
  bool backward_reads(std::size_t) const {
    if constexpr (requires { F::reads_values; }) return F::reads_values;
    else return true;
  }
};

struct AddF {
  static constexpr std::string_view name = "add";
  static constexpr bool reads_values = false;
  template <class T> static T apply(T x, T y) { return x + y; }
  template <class V> static V grad_a(const V& g, const V&, const V&, const V&) { return g; }
  template <class V> static V grad_b(const V& g, const V&, const V&, const V&) { return g; }
};
struct SubF {
  static constexpr std::string_view name = "sub";
  static constexpr bool reads_values = false;
  template <class T> static T apply(T x, T y) { return x - y; }
  template <class V> static V grad_a(const V& g, const V&, const V&, const V&) { return g; }
  template <class V> static V grad_b(const V& g, const V&, const V&, const V&) { return neg(g); }
};
struct MulF {
  static constexpr std::string_view name = "mul";
  template <class T> static T apply(T x, T y) { return x * y; }
  template <class V> static V grad_a(const V& g, const V&, const V& b, const V&) { return mul(g, b); }
  template <class V> static V grad_b(const V& g, const V& a, const V&, const V&) { return mul(g, a); }
};
struct DivF {
  static constexpr std::string_view name = "div";
  template <class T> static T apply(T x, T y) { return x / y; }
  template <class V> static V grad_a(const V& g, const V&, const V& b, const V&) { return div(g, b); }
  // d(a/b)/db = -a/b^2 = -out/b
  template <class V> static V grad_b(const V& g, const V&, const V& b, const V& out) {
    return neg(div(mul(g, out), b));
  }
};
struct PowF {
  static constexpr std::string_view name = "pow";
  template <class T> static T apply(T x, T y) { return std::pow(x, y); }
  // d(a^b)/da = b * a^(b-1); where b = 0 it is 0 (a^0 is constant), not 0 * 0^-1 = NaN at
  // a = 0: the exponent reads 1 there instead.
  template <class V> static V grad_a(const V& g, const V& a, const V& b, const V&) {
    const Tensor& bv = value_of(b);
    const V exponent = where(lift(g, equal(bv, scalar_like(bv, 0.0))), scalar_like(b, 1.0), sub(b, scalar_like(b, 1.0)));
    return mul(g, mul(b, pow(a, exponent)));
  }
  // d(a^b)/db = a^b * log(a) for a > 0; at a = 0 it is 0 (a^b is 0 on that side), not
  // 0 * -inf: log reads 1 there instead.
  template <class V> static V grad_b(const V& g, const V& a, const V&, const V& out) {
    const Tensor& av = value_of(a);
    const V base = where(lift(g, equal(av, scalar_like(av, 0.0))), scalar_like(a, 1.0), a);
    return mul(g, mul(out, log(base)));
  }
};
// Ties send the gradient to the first operand. A NaN operand gives NaN, as NumPy's and
// PyTorch's maximum and minimum (a comparison alone would pick the other operand). The two
// differ only in the direction of their comparisons.
template <bool Max>
struct ExtremumF {
  static constexpr std::string_view name = Max ? "maximum" : "minimum";
  template <class T> static T apply(T x, T y) { return (Max ? x >= y : x <= y) || std::isnan(x) ? x : y; }
  // Where x beats y (with ties when or_equal): the mask of the operand that gets the gradient.
  static Tensor beats(const Tensor& x, const Tensor& y, bool or_equal) {
    if constexpr (Max) return or_equal ? greater_equal(x, y) : greater(x, y);
    else return or_equal ? less_equal(x, y) : less(x, y);
  }
  template <class V> static V grad_a(const V& g, const V& a, const V& b, const V&) {
    return mul(g, lift(g, beats(value_of(a), value_of(b), true)));
  }
  template <class V> static V grad_b(const V& g, const V& a, const V& b, const V&) {
    return mul(g, lift(g, beats(value_of(b), value_of(a), false)));
  }
};
using MaximumF = ExtremumF<true>;
using MinimumF = ExtremumF<false>;

struct Neg {
  static constexpr std::string_view name = "neg";
  static constexpr bool elementwise = true;
  Tensor forward(const Tensor& x) const {
    return dispatch_floating(name, x.dtype(), [&]<class T>() { return unary_map<T>(x, [](T v) { return -v; }); });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {neg(a.grad)};
  }
};

}  // namespace

RECUR_EXPOSE_FAMILY(RECUR_EXPOSE_BINARY, Binary, (add, AddF), (sub, SubF), (mul, MulF), (div, DivF), (pow, PowF),
                    (maximum, MaximumF), (minimum, MinimumF))
RECUR_EXPOSE_UNARY(neg, Neg{})

template <TensorOrVar V>
V scalar_op(char op, const V& a, double s, bool scalar_first) {
  return transactional(a, [&]() -> V {
    const V c = scalar_like(a, s);
    const V& x = scalar_first ? c : a;
    const V& y = scalar_first ? a : c;
    switch (op) {
      case '+': return add(x, y);
      case '-': return sub(x, y);
      case '*': return mul(x, y);
      case '/': return div(x, y);
      default: return pow(x, y);
    }
  });
}
template Tensor scalar_op(char, const Tensor&, double, bool);
template Var scalar_op(char, const Var&, double, bool);

Tensor scalar_like(const Tensor& like, double value) { return scalar(value, like.dtype()); }
Var scalar_like(const Var& like, double value) { return like.tape().constant(scalar(value, like.dtype())); }

}  // namespace recur
