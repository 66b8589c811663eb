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

namespace {
// Whether `into`'s buffer can take a sum of `other`'s shape in place: nobody else holds it.
bool takes_sum_in_place(const Tensor& into, const Tensor& other) {
  return into.shape() == other.shape() && into.dtype() == other.dtype() && into.storage()->unique() &&
         into.storage() != other.storage();
}
}  // namespace

void accumulate_into(Tensor& acc, const Tensor& g) {
  if (!acc.defined()) {
    acc = g;
    return;
  }
  if (takes_sum_in_place(acc, g)) {
    dispatch(acc.dtype(), [&]<class T>() {
      T* x = acc.data<T>();
      const T* y = g.data<T>();
      for (std::int64_t i = 0, n = acc.numel(); i < n; ++i) x[i] += y[i];
    });
    return;
  }
  acc = add_tensors("accumulate", acc, g);
}

void accumulate_into(Tensor& acc, Tensor&& g) {
  if (!acc.defined()) {
    acc = std::move(g);
    return;
  }
  if (!g.defined() || takes_sum_in_place(acc, g) || !takes_sum_in_place(g, acc))
    return accumulate_into(acc, static_cast<const Tensor&>(g));
  dispatch(acc.dtype(), [&]<class T>() {
    const T* x = acc.data<T>();
    T* y = g.data<T>();
    for (std::int64_t i = 0, n = g.numel(); i < n; ++i) y[i] = x[i] + y[i];  // acc + g, as add_tensors
  });
  acc = std::move(g);
}

}  // namespace recur
