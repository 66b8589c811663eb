// Gradient-check rows: elementwise arithmetic and its operators, unary functions,
// comparisons, where. Every row here runs on Tensors and on Vars.
#include "grad_table.hpp"

namespace recur::testing {

std::vector<GradCase> elementwise_cases() {
  // Comparisons give 0/1 masks; multiplied by an operand they have a gradient to check.
  const std::string nan_compare =
      "a comparison with NaN is false (NumPy and PyTorch alike): the mask is 0 or 1, not NaN, although moving the "
      "element flips it";
  auto masked = [&](const char* name, auto compare) {
    return GradCase{name, broadcast_pair(), [compare](auto x) { return compare(x[0], x[1]) * x[0]; },
                    Domain::distinct}
        .nan_exempt(nan_compare);
  };
  return {
      GradCase{"add", broadcast_pair(), [](auto x) { return add(x[0], x[1]); }},
      GradCase{"sub", broadcast_pair(), [](auto x) { return x[0] - x[1]; }}.covers({"operator-"}),
      GradCase{"mul", broadcast_pair(), [](auto x) { return x[0] * x[1]; }}.covers({"operator*"}),
      GradCase{"div", broadcast_pair(), [](auto x) { return x[0] / x[1]; }, Domain::away_from_zero}.covers(
          {"operator/"}),
      GradCase{"neg", same_shape(1), [](auto x) { return -x[0]; }}.covers({"operator-"}),
      GradCase{"pow", broadcast_pair(), [](auto x) { return pow(x[0], x[1]); }, Domain::positive},
      GradCase{"pow_scalar", same_shape(1), [](auto x) { return pow(x[0], 3.0); }},
      GradCase{"scalar_ops", same_shape(1),
               [](auto x) { return (2.0 * x[0] + 1.0) / 3.0 - 0.5 * x[0] * x[0]; }}
          .covers({"scalar_op", "operator+", "operator-", "operator*", "operator/"}),
      GradCase{"operators", broadcast_pair(), [](auto x) { return (x[0] + x[1]) * x[0] - x[1] / (x[0] * x[0] + 1.0); }}
          .covers({"operator+", "operator-", "operator*", "operator/"})
          .partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"maximum", broadcast_pair(), [](auto x) { return maximum(x[0], x[1]); }, Domain::distinct},
      GradCase{"minimum", broadcast_pair(), [](auto x) { return minimum(x[0], x[1]); }, Domain::distinct},
      GradCase{"exp", same_shape(1), [](auto x) { return exp(x[0]); }},
      GradCase{"log", same_shape(1), [](auto x) { return log(x[0]); }, Domain::positive},
      GradCase{"sqrt", same_shape(1), [](auto x) { return sqrt(x[0]); }, Domain::positive},
      GradCase{"abs", same_shape(1), [](auto x) { return abs(x[0]); }, Domain::away_from_zero},
      GradCase{"tanh", same_shape(1), [](auto x) { return tanh(x[0]); }},
      GradCase{"sigmoid", same_shape(1), [](auto x) { return sigmoid(x[0]); }},
      GradCase{"relu", same_shape(1), [](auto x) { return relu(x[0]); }, Domain::away_from_zero},
      GradCase{"softplus", same_shape(1), [](auto x) { return softplus(x[0]); }},
      GradCase{"clip", same_shape(1), [](auto x) { return clip(x[0], -0.25, 0.25); }, Domain::away_from_zero},
      GradCase{"where", broadcast_pair(),
               [](auto x) { return where(greater(x[0], scalar_like(x[0], 0.0)), x[0] * x[0], x[1]); },
               Domain::away_from_zero}
          .covers({"greater", "scalar_like"})
          .nan_exempt("the mask comes from a comparison: NaN > 0 is false, so where picks x1 (as NumPy's where)")
          .partial_on_throw(earlier_ops_stay_recorded),
      // Against maximum(a, b), so that both outcomes occur.
      masked("equal", [](const auto& a, const auto& b) { return equal(a, maximum(a, b)); }).covers({"maximum"}),
      masked("not_equal", [](const auto& a, const auto& b) { return not_equal(a, maximum(a, b)); })
          .covers({"maximum"}),
      masked("less", [](const auto& a, const auto& b) { return less(a, b); }),
      masked("less_equal", [](const auto& a, const auto& b) { return less_equal(a, b); }),
      masked("greater", [](const auto& a, const auto& b) { return greater(a, b); }),
      masked("greater_equal", [](const auto& a, const auto& b) { return greater_equal(a, b); }),
      GradCase{"chain_tanh_mul_add", broadcast_pair(), [](auto x) { return tanh(x[0] * x[1] + x[0]); }}
          .covers({"tanh", "mul", "add"})
          .float32_within(1e-2, tanh_derivative_cancels),
      // A round trip through the other floating dtype: exact from float32, the identity in
      // float64 (finite differences in float64 cannot see through a float32 rounding;
      // test_cast.cpp checks that direction with a suitable step).
      GradCase{"cast", same_shape(1),
               [](auto x) {
                 const DType other = x[0].dtype() == DType::float64 ? DType::float32 : DType::float64;
                 const auto there = x[0].dtype() == DType::float64 ? x[0] : cast(x[0], other);
                 return cast(there, x[0].dtype()) * x[0];
               }},
  };
}

}  // namespace recur::testing
