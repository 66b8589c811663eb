#include <recur/core/creation.hpp>

#include <algorithm>
#include <cmath>

namespace recur {

Tensor full(const Shape& shape, double value, DType dtype) {
  Tensor t = Tensor::empty(shape, dtype);
  dispatch(dtype, [&]<class T>() { std::fill_n(t.data<T>(), t.numel(), element_cast<T>(value, "full")); });
  return t;
}
Tensor zeros(const Shape& shape, DType dtype) { return full(shape, 0.0, dtype); }
Tensor ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor zeros_like(const Tensor& t) { return zeros(t.shape(), t.dtype()); }
Tensor ones_like(const Tensor& t) { return ones(t.shape(), t.dtype()); }
Tensor full_like(const Tensor& t, double value) { return full(t.shape(), value, t.dtype()); }
Tensor scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor arange(double start, double stop, double step, DType dtype) {
  if (step == 0) fail<ValueError>("arange", "argument 'step' must not be 0");
  const double count = std::max(0.0, std::ceil((stop - start) / step));
  // Also catches NaN and infinite bounds, whose count is not a number of elements.
  if (!(count < 9.0e15))
    fail<ValueError>("arange", "from ", start, " to ", stop, " by ", step, " is not a finite number of elements");
  const auto n = static_cast<std::int64_t>(count);
  Tensor t = Tensor::empty({n}, dtype);
  dispatch(dtype, [&]<class T>() {
    T* p = t.data<T>();
    for (std::int64_t i = 0; i < n; ++i) p[i] = element_cast<T>(start + static_cast<double>(i) * step, "arange");
  });
  return t;
}
Tensor arange(std::int64_t n, DType dtype) { return arange(0.0, static_cast<double>(n), 1.0, dtype); }

template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape) {
  if (static_cast<std::int64_t>(values.size()) != numel(shape))
    fail<ShapeError>("from_vector", values.size(), " values do not fill shape ", to_string(shape));
  Tensor t = Tensor::empty(shape, dtype_of<T>());
  std::copy(values.begin(), values.end(), t.data<T>());
  return t;
}

template <class T>
std::vector<T> to_vector(const Tensor& t) {
  const Tensor c = t.to(dtype_of<T>());
  return std::vector<T>(c.data<T>(), c.data<T>() + c.numel());
}

template Tensor from_vector(const std::vector<float>&, const Shape&);
template Tensor from_vector(const std::vector<double>&, const Shape&);
template Tensor from_vector(const std::vector<std::int64_t>&, const Shape&);
template std::vector<float> to_vector(const Tensor&);
template std::vector<double> to_vector(const Tensor&);
template std::vector<std::int64_t> to_vector(const Tensor&);

namespace {
// Flattens a nested list, recording the size of each level; ragged lists are an error.
void flatten(List1 l, std::size_t depth, Shape& shape, std::vector<double>& out) {
  if (shape.size() <= depth) shape.push_back(static_cast<std::int64_t>(l.size()));
  else if (shape[depth] != static_cast<std::int64_t>(l.size()))
    fail<ShapeError>("tensor", "ragged nested list: a row of ", l.size(), " where ", shape[depth],
                     " were expected at depth ", depth);
  out.insert(out.end(), l.begin(), l.end());
}
template <class L>
void flatten(std::initializer_list<L> l, std::size_t depth, Shape& shape, std::vector<double>& out) {
  if (shape.size() <= depth) shape.push_back(static_cast<std::int64_t>(l.size()));
  else if (shape[depth] != static_cast<std::int64_t>(l.size()))
    fail<ShapeError>("tensor", "ragged nested list: a row of ", l.size(), " where ", shape[depth],
                     " were expected at depth ", depth);
  for (const auto& inner : l) flatten(inner, depth + 1, shape, out);
}
template <class L>
Tensor from_list(L values, DType dtype) {
  Shape shape;
  std::vector<double> flat;
  flatten(values, 0, shape, flat);
  return from_vector(flat, shape).to(dtype);
}
}  // namespace

Tensor tensor(List1 values, DType dtype) { return from_list(values, dtype); }
Tensor tensor(List2 values, DType dtype) { return from_list(values, dtype); }
Tensor tensor(List3 values, DType dtype) { return from_list(values, dtype); }
Tensor tensor(List4 values, DType dtype) { return from_list(values, dtype); }

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape())
    fail<ShapeError>("max_abs_diff", "shapes differ: ", to_string(a.shape()), " and ", to_string(b.shape()));
  const auto x = to_vector<double>(a), y = to_vector<double>(b);
  double m = 0;
  for (std::size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

bool allclose(const Tensor& a, const Tensor& b, double rtol, double atol) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const auto x = to_vector<double>(a), y = to_vector<double>(b);
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!(std::abs(x[i] - y[i]) <= atol + rtol * std::abs(y[i]))) return false;
  return true;
}

}  // namespace recur
