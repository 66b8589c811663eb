#pragma once
// Matrix products through BLAS gemm.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// NumPy's matmul for ranks 1 to 3: [M,K]x[K,N]; a batch [B,M,K]x[B,K,N] (a batch of 1 on
// either side broadcasts); [B,M,K]x[K,N] runs as one [B*M,K]x[K,N] gemm; a 1-D operand is
// a row (left) or a column (right) vector whose axis is dropped from the result.
Tensor matmul(const Tensor& a, const Tensor& b);
Var matmul(const Var& a, const Var& b);

// op(a) x op(b) for 2-D or batched 3-D operands, op(x) = x or its transpose over the last
// two axes. The transposes are gemm flags, never copies; matmul's backward uses these.
Tensor matmul_t(const Tensor& a, const Tensor& b, bool transpose_a, bool transpose_b);
Var matmul_t(const Var& a, const Var& b, bool transpose_a, bool transpose_b);

}  // namespace recur
