// Gradient-check rows: reductions.
#include "grad_table.hpp"

namespace recur::testing {

std::vector<GradCase> reduction_cases() {
  return {
      {"sum_all", same_shape(1), [](auto x) { return sum(x[0] * x[0]); }},
      {"sum_axis", same_shape(1, 2, 3), [](auto x) { return sum(x[0] * x[0], {-1}); }},
      {"sum_axes_keepdims", same_shape(1, 3, 3), [](auto x) { return sum(x[0] * x[0], {0, 2}, true) * x[0]; }},
      {"mean_axis", same_shape(1, 1, 3), [](auto x) { return mean(tanh(x[0]), {0}); }},
      // Exempt until ops/reduce.cpp (being rewritten) propagates NaN: np.max and torch.max do.
      GradCase{"max_all", same_shape(1, 1, 3), [](auto x) { return max(x[0] * x[0]); }, Domain::distinct}.nan_exempt(
          "KNOWN BUG: ops/reduce.cpp's max skips a NaN element instead of returning NaN"),
      GradCase{"max_axis_keepdims", same_shape(1, 2, 3), [](auto x) { return max(x[0], {1}, true) * x[0]; },
               Domain::distinct}
          .nan_exempt("KNOWN BUG: ops/reduce.cpp's max skips a NaN element instead of returning NaN"),
  };
}

}  // namespace recur::testing
