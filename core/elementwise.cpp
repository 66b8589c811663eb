#include <recur/core/elementwise.hpp>

namespace recur {

void check_same_dtype(std::string_view op, const Tensor& a, const Tensor& b, std::string_view a_name,
                      std::string_view b_name) {
  if (a.dtype() != b.dtype())
    fail<DTypeError>(op, "argument '", a_name, "' is ", a.dtype(), " of shape ", to_string(a.shape()),
                     " but argument '", b_name, "' is ", b.dtype(), " of shape ", to_string(b.shape()),
                     "; convert one with .to()");
}

}  // namespace recur

namespace recur {

Tensor add_tensors(std::string_view op, const Tensor& a, const Tensor& b) {
  check_same_dtype(op, a, b);
  return dispatch(a.dtype(), [&]<class T>() { return binary_map<T>(op, a, b, [](T x, T y) { return x + y; }); });
}

void accumulate_into(Tensor& acc, const Tensor& g) {
  if (!acc.defined()) {
    acc = g;
    return;
  }
  if (acc.shape() == g.shape() && acc.dtype() == g.dtype() && acc.storage()->unique() &&
      acc.storage() != g.storage()) {
    dispatch(acc.dtype(), [&]<class T>() {
      T* x = acc.data<T>();
      const T* y = g.data<T>();
      for (std::int64_t i = 0, n = acc.numel(); i < n; ++i) x[i] += y[i];
    });
    return;
  }
  acc = add_tensors("accumulate", acc, g);
}

}  // namespace recur
