// Gradient-check rows: reshape, squeeze, unsqueeze, permute, transpose, broadcast_to, sum_to.
#include "grad_table.hpp"

namespace recur::testing {

std::vector<GradCase> shape_cases() {
  return {
      {"reshape", fixed({{2, 3, 4}}), [](auto x) { return reshape(x[0], {4, -1}) * reshape(x[0], {4, 6}); }},
      GradCase{"squeeze_unsqueeze", fixed({{3, 1, 2}}), [](auto x) { return unsqueeze(squeeze(x[0], 1), -1) * 2.0; }}
          .covers({"unsqueeze"}),
      {"permute", same_shape(1, 3, 3), [](auto x) { return permute(x[0], {2, 0, 1}) * permute(x[0], {2, 0, 1}); }},
      {"transpose", same_shape(1, 2, 3), [](auto x) { return transpose(x[0]) * transpose(x[0], 0, -1).rank(); }},
      GradCase{"broadcast_to", [](Rng& rng) {
         const Shape big = random_shape(rng, 1, 3);
         return std::vector<Shape>{broadcastable_to(rng, big), big};
       },
       [](auto x) { return broadcast_to(x[0], x[1].shape()) * x[1]; }}.partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"sum_to", [](Rng& rng) {
         const Shape big = random_shape(rng, 1, 3);
         return std::vector<Shape>{big, broadcastable_to(rng, big)};
       },
       [](auto x) { return sum_to(x[0] * x[0], x[1].shape()) * x[1]; }}.partial_on_throw(earlier_ops_stay_recorded),
  };
}

}  // namespace recur::testing
