#pragma once
// Internal to the fused recurrent ops (ops/nn/*_pointwise.cpp): the checks of their
// arguments; their arithmetic is in cell_kernels_detail.hpp.
#include <cstdint>
#include <string_view>

#include <recur/core/elementwise.hpp>
#include <recur/core/tensor.hpp>

namespace recur::nn::detail {

// A 2-D floating argument [B, width * H] of the op, of x's dtype and batch.
// H = hidden.size(1); ShapeError / DTypeError naming op, both arguments and their shapes.
inline void check_step_argument(std::string_view op, const Tensor& x, std::string_view x_name, std::int64_t width,
                                const Tensor& hidden, std::string_view hidden_name) {
  if (!is_floating(hidden.dtype())) fail<DTypeError>(op, "expects float32 or float64, got ", hidden.dtype());
  check_same_dtype(op, x, hidden, x_name, hidden_name);
  if (x.rank() != 2 || hidden.rank() != 2 || x.size(0) != hidden.size(0) || x.size(1) != width * hidden.size(1))
    fail<ShapeError>(op, "argument '", x_name, "' of shape ", to_string(x.shape()), " does not fit argument '",
                     hidden_name, "' of shape ", to_string(hidden.shape()), ": expected [B, ", width,
                     " * H] beside [B, H]");
}

}  // namespace recur::nn::detail
