#pragma once
// The elementwise linear recurrence h_t = a_t * h_{t-1} + b_t, the core of S4/S5/LRU/Mamba
// and minGRU layers, as one op: a sequential CPU loop instead of T recorded steps.
//
//   Var h = linear_recurrence(a, b, h0, {.axis = 0, .reverse = false});
//
// a and b broadcast against each other (NumPy rules) to the result's shape; `axis` (of that
// shape, negative counts from the back) is time. h0 broadcasts to the result's shape without
// the time axis. reverse runs from the last step: h_t = a_t * h_{t+1} + b_t. All three share
// one floating dtype. Its backward is the same recurrence run the other way, so it is
// differentiable to any order; associative_scan (ops/scan/associative.hpp) with the pair
// composition (a1, b1), (a2, b2) -> (a1 a2, a2 b1 + b2) computes the same values.
#include <cstdint>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

struct LinearRecurrenceOptions {
  std::int64_t axis = 0;
  bool reverse = false;
};

Tensor linear_recurrence(const Tensor& a, const Tensor& b, const Tensor& h0, const LinearRecurrenceOptions& options = {});
Var linear_recurrence(const Var& a, const Var& b, const Var& h0, const LinearRecurrenceOptions& options = {});

}  // namespace recur
