// Gradient-check rows: logsumexp, softmax, log_softmax and the losses. The "_large" rows
// shift and scale the logits far beyond exp's range (exp(1000) overflows double), so they
// pass only if the kernels are stabilised.
#include "grad_table.hpp"

namespace recur::testing {
namespace {

// Fixed labels in [0, C) for logits of shape [C], [N, C] or [N, C, d...], spread over the
// classes so that every class gets picked in larger shapes.
Tensor labels_for(const Shape& logits) {
  const std::int64_t axis = logits.size() == 1 ? 0 : 1;
  Shape s = logits;
  s.erase(s.begin() + axis);
  Tensor t = Tensor::empty(s, DType::int64);
  for (std::int64_t j = 0; j < t.numel(); ++j) t.data<std::int64_t>()[j] = (7 * j + 3) % logits[axis];
  return t;
}

auto large(const auto& x) { return x * 20.0 + 1000.0; }

}  // namespace

std::vector<GradCase> loss_cases() {
  using R = Reduction;
  const std::string bce = "binary_cross_entropy_with_logits";
  // float32's spacing at 1000 is 6.1e-5: 20 x + 1000 is off by up to 3e-5 before the
  // kernels subtract the maximum, an error of that size in O(1) logit differences.
  const std::string large_in_float32 = "20 x + 1000 rounds to float32's spacing at 1000 (6.1e-5)";
  // In float64 20 x + 1000 carries a rounding error of ~1e-13, which the second-order
  // check's differences of gradients (step 1e-6, slope 20) turn into ~2e-6.
  const std::string large_in_differences = "rounding at 1000 (1e-13) over the step 1e-6, times 20";
  auto ce = [](R r) { return [r](auto x) { return cross_entropy(x[0], labels_for(x[0].shape()), r); }; };
  return {
      {"logsumexp_all", same_shape(1), [](auto x) { return logsumexp(x[0]); }},
      {"logsumexp_axis_keepdims", same_shape(1, 2, 3), [](auto x) { return logsumexp(x[0], {1}, true) * x[0]; }},
      {"logsumexp_axes", same_shape(1, 3, 3), [](auto x) { return logsumexp(x[0], {0, -1}); }},
      // - 1000 keeps the checked values O(1), so finite differences stay accurate.
      GradCase{"logsumexp_large", same_shape(1, 1, 3), [](auto x) { return logsumexp(large(x[0]), {-1}) - 1000.0; }}
          .float32_within(1e-4, large_in_float32)
          .finite_differences_within(1e-5, large_in_differences),
      {"softmax_last", same_shape(1, 1, 3), [](auto x) { return softmax(x[0]); }},
      {"softmax_axis0", same_shape(1, 2, 3), [](auto x) { return softmax(x[0], 0); }},
      {"softmax_middle_times_x", same_shape(1, 3, 3), [](auto x) { return softmax(x[0], 1) * x[0]; }},
      GradCase{"softmax_large", same_shape(1, 2, 3), [](auto x) { return softmax(large(x[0]), 1); }}
          .float32_within(1e-4, large_in_float32)
          .finite_differences_within(1e-5, large_in_differences),
      {"log_softmax_last", same_shape(1, 1, 3), [](auto x) { return log_softmax(x[0]); }},
      {"log_softmax_middle", same_shape(1, 3, 3), [](auto x) { return log_softmax(x[0], -2); }},
      GradCase{"log_softmax_large", same_shape(1, 2, 3), [](auto x) { return log_softmax(large(x[0]), 0); }}
          .float32_within(1e-4, large_in_float32)
          .finite_differences_within(1e-5, large_in_differences),
      {"cross_entropy_mean", same_shape(1, 1, 3), ce(R::mean)},
      {"cross_entropy_sum", same_shape(1, 1, 3), ce(R::sum)},
      {"cross_entropy_none", same_shape(1, 1, 3), ce(R::none)},
      {"cross_entropy_large", same_shape(1, 1, 3),
       [](auto x) { return cross_entropy(large(x[0]), labels_for(x[0].shape()), R::mean); }},
      {"cross_entropy_of_tanh", same_shape(1, 2, 2),
       [](auto x) { return cross_entropy(tanh(x[0]) * x[0], labels_for(x[0].shape()), R::sum); }},
      {"mse_mean", same_shape(2), [](auto x) { return mse(x[0], x[1]); }},
      {"mse_sum", same_shape(2), [](auto x) { return mse(x[0], x[1], R::sum); }},
      {"mse_none", same_shape(2), [](auto x) { return mse(x[0], x[1], R::none); }},
      GradCase{"bce_with_logits_mean", same_shape(2),
               [](auto x) { return binary_cross_entropy_with_logits(x[0], sigmoid(x[1])); }}
          .covers({bce})
          .partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"bce_with_logits_none", same_shape(2),
               [](auto x) { return binary_cross_entropy_with_logits(x[0], x[1], R::none); }}
          .covers({bce}),
      GradCase{"bce_with_logits_large", same_shape(2),
               [](auto x) { return binary_cross_entropy_with_logits(x[0] * 40.0, sigmoid(x[1]), R::sum); }}
          .covers({bce})
          .partial_on_throw(earlier_ops_stay_recorded),
  };
}

}  // namespace recur::testing
