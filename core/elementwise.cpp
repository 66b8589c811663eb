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

// into[i] = a[i] + b[i], the operands in add_tensors' order (into is a or b).
void write_sum(Tensor& into, const Tensor& a, const Tensor& b) {
  dispatch(into.dtype(), [&]<class T>() {
    const T* x = a.data<T>();
    const T* y = b.data<T>();
    T* out = into.data<T>();
    for (std::int64_t i = 0, n = into.numel(); i < n; ++i) out[i] = x[i] + y[i];
  });
}

// acc += g; `given` is g when the caller gives it away, so its buffer may take the sum.
void accumulate(Tensor& acc, const Tensor& g, Tensor* given) {
  if (!acc.defined()) {
    acc = given ? std::move(*given) : g;
    return;
  }
  if (takes_sum_in_place(acc, g)) return write_sum(acc, acc, g);
  if (given && given->defined() && takes_sum_in_place(*given, acc)) {
    write_sum(*given, acc, *given);
    acc = std::move(*given);
    return;
  }
  acc = add_tensors("accumulate", acc, g);
}
}  // namespace

void accumulate_into(Tensor& acc, const Tensor& g) { accumulate(acc, g, nullptr); }
void accumulate_into(Tensor& acc, Tensor&& g) { accumulate(acc, g, &g); }

}  // namespace recur
