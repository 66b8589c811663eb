// Gradient-check rows: reductions.
#include "grad_table.hpp"

namespace recur::testing {

std::vector<GradCase> reduction_cases() {
  return {
      {"sum_all", same_shape(1), [](auto x) { return sum(x[0] * x[0]); }},
      {"sum_axis", same_shape(1, 2, 3), [](auto x) { return sum(x[0] * x[0], {-1}); }},
      {"sum_axes_keepdims", same_shape(1, 3, 3), [](auto x) { return sum(x[0] * x[0], {0, 2}, true) * x[0]; }},
      {"mean_axis", same_shape(1, 1, 3), [](auto x) { return mean(tanh(x[0]), {0}); }},
      {"max_all", same_shape(1, 1, 3), [](auto x) { return max(x[0] * x[0]); }, Domain::distinct},
      {"max_axis_keepdims", same_shape(1, 2, 3), [](auto x) { return max(x[0], {1}, true) * x[0]; }, Domain::distinct},
      {"min_all", same_shape(1, 1, 3), [](auto x) { return min(x[0] * x[0]); }, Domain::distinct},
      {"min_axis_keepdims", same_shape(1, 2, 3), [](auto x) { return min(x[0], {1}, true) * x[0]; }, Domain::distinct},
      {"prod_all", same_shape(1, 0, 3), [](auto x) { return prod(x[0]); }},
      {"prod_axes_keepdims", same_shape(1, 2, 3), [](auto x) { return prod(x[0], {0, -1}, true) * x[0]; }},
      {"prod_middle_axis", same_shape(1, 3, 3), [](auto x) { return prod(tanh(x[0]), {1}); }},
  };
}

}  // namespace recur::testing
