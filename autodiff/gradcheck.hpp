#pragma once
// A gradient checker for users' own tests: compares recur's gradients with central finite
// differences in float64, first order and (through create_graph) second order.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

struct GradCheckOptions {
  double eps = 1e-6;          // finite-difference step
  double rtol = 1e-5;         // |analytic - numeric| <= atol + rtol * |numeric|
  double atol = 1e-6;
  bool second_order = true;   // also check Hessian-vector products
  std::uint64_t seed = 1234;  // for the random output weights and directions
};

struct GradCheckReport {
  bool ok = true;
  double max_error_first = 0;   // largest |analytic - numeric| of the gradient
  double max_error_second = 0;  // the same for Hessian-vector products
  std::string failure;          // where the first mismatch is, empty when ok
  explicit operator bool() const { return ok; }
};

using GradCheckFn = std::function<Var(std::span<const Var>)>;

// Checks f at `inputs` (float64 tensors). f may return any shape: the checked scalar is
// <f(x), w> with a fixed random w. Second order checks d/dx <grad(x), v> for a random v.
GradCheckReport check_gradients(const GradCheckFn& f, const std::vector<Tensor>& inputs,
                                const GradCheckOptions& options = {});

}  // namespace recur
