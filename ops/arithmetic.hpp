#pragma once
// Elementwise arithmetic with NumPy broadcasting: add, sub, mul, div, neg, pow, maximum,
// minimum, and the C++ operators on Tensors and Vars (a scalar operand takes the other
// operand's dtype). Both operands must have the same floating dtype.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/declare.hpp>

namespace recur {

RECUR_DECLARE_BINARY_OPS(add, sub, mul, div, pow, maximum, minimum)

Tensor neg(const Tensor& x);
Var neg(const Var& x);

// A scalar shaped like nothing (0-d) with the dtype of `like`.
Tensor scalar_like(const Tensor& like, double value);
Var scalar_like(const Var& like, double value);

// Operators. Tensor op Tensor stays a Tensor; anything with a Var (or Shared) is a Var.
inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator-(const Tensor& a) { return neg(a); }
inline Var operator+(const Var& a, const Var& b) { return add(a, b); }
inline Var operator-(const Var& a, const Var& b) { return sub(a, b); }
inline Var operator*(const Var& a, const Var& b) { return mul(a, b); }
inline Var operator/(const Var& a, const Var& b) { return div(a, b); }
inline Var operator-(const Var& a) { return neg(a); }

template <class V> concept TensorOrVar = std::is_same_v<V, Tensor> || std::is_same_v<V, Var>;
// `a op scalar`: the scalar becomes a 0-d constant of a's dtype. Declared here, defined
// in arithmetic.cpp for Tensor and Var (where a failure leaves the tape unchanged).
template <TensorOrVar V> V scalar_op(char op, const V& a, double s, bool scalar_first);
template <TensorOrVar V> V operator+(const V& a, double s) { return scalar_op('+', a, s, false); }
template <TensorOrVar V> V operator+(double s, const V& a) { return scalar_op('+', a, s, true); }
template <TensorOrVar V> V operator-(const V& a, double s) { return scalar_op('-', a, s, false); }
template <TensorOrVar V> V operator-(double s, const V& a) { return scalar_op('-', a, s, true); }
template <TensorOrVar V> V operator*(const V& a, double s) { return scalar_op('*', a, s, false); }
template <TensorOrVar V> V operator*(double s, const V& a) { return scalar_op('*', a, s, true); }
template <TensorOrVar V> V operator/(const V& a, double s) { return scalar_op('/', a, s, false); }
template <TensorOrVar V> V operator/(double s, const V& a) { return scalar_op('/', a, s, true); }
template <TensorOrVar V> V pow(const V& a, double s) { return scalar_op('^', a, s, false); }

}  // namespace recur
