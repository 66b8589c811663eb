#pragma once
// Making tensors: filled, ranges, from nested initializer lists and from std::vector.
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <recur/core/tensor.hpp>

namespace recur {

Tensor zeros(const Shape& shape, DType dtype = DType::float32);
Tensor ones(const Shape& shape, DType dtype = DType::float32);
Tensor full(const Shape& shape, double value, DType dtype = DType::float32);
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
// A 0-d tensor.
Tensor scalar(double value, DType dtype = DType::float32);
// [start, stop) in steps of `step`, as NumPy's arange.
Tensor arange(double start, double stop, double step = 1.0, DType dtype = DType::float32);
Tensor arange(std::int64_t n, DType dtype = DType::int64);

// From values in row-major order; values.size() must equal numel(shape).
template <class T>
Tensor from_vector(const std::vector<T>& values, const Shape& shape);
template <class T>
std::vector<T> to_vector(const Tensor& t);  // converts element type when needed

// Nested initializer lists: tensor({{1, 2}, {3, 4}}) is a 2x2 float32 tensor.
using List1 = std::initializer_list<double>;
using List2 = std::initializer_list<List1>;
using List3 = std::initializer_list<List2>;
using List4 = std::initializer_list<List3>;
Tensor tensor(List1 values, DType dtype = DType::float32);
Tensor tensor(List2 values, DType dtype = DType::float32);
Tensor tensor(List3 values, DType dtype = DType::float32);
Tensor tensor(List4 values, DType dtype = DType::float32);

// True when shapes and dtypes match and |a - b| <= atol + rtol * |b| everywhere.
bool allclose(const Tensor& a, const Tensor& b, double rtol = 1e-5, double atol = 1e-8);
// Largest |a - b| (shapes must match).
double max_abs_diff(const Tensor& a, const Tensor& b);

}  // namespace recur
