// Gradient-check rows: elementwise arithmetic, unary functions, where.
#include "grad_table.hpp"

namespace recur::testing {

std::vector<GradCase> elementwise_cases() {
  using S = std::span<const Var>;
  return {
      {"add", broadcast_pair(), [](S x) { return add(x[0], x[1]); }},
      {"sub", broadcast_pair(), [](S x) { return x[0] - x[1]; }},
      {"mul", broadcast_pair(), [](S x) { return x[0] * x[1]; }},
      {"div", broadcast_pair(), [](S x) { return x[0] / x[1]; }, Domain::away_from_zero},
      {"neg", same_shape(1), [](S x) { return -x[0]; }},
      {"pow", broadcast_pair(), [](S x) { return pow(x[0], x[1]); }, Domain::positive},
      {"pow_scalar", same_shape(1), [](S x) { return pow(x[0], 3.0); }},
      {"scalar_ops", same_shape(1), [](S x) { return (2.0 * x[0] + 1.0) / 3.0 - 0.5 * x[0] * x[0]; }},
      {"maximum", broadcast_pair(), [](S x) { return maximum(x[0], x[1]); }, Domain::distinct},
      {"minimum", broadcast_pair(), [](S x) { return minimum(x[0], x[1]); }, Domain::distinct},
      {"exp", same_shape(1), [](S x) { return exp(x[0]); }},
      {"log", same_shape(1), [](S x) { return log(x[0]); }, Domain::positive},
      {"sqrt", same_shape(1), [](S x) { return sqrt(x[0]); }, Domain::positive},
      {"abs", same_shape(1), [](S x) { return abs(x[0]); }, Domain::away_from_zero},
      {"tanh", same_shape(1), [](S x) { return tanh(x[0]); }},
      {"sigmoid", same_shape(1), [](S x) { return sigmoid(x[0]); }},
      {"relu", same_shape(1), [](S x) { return relu(x[0]); }, Domain::away_from_zero},
      {"softplus", same_shape(1), [](S x) { return softplus(x[0]); }},
      {"clip", same_shape(1), [](S x) { return clip(x[0], -0.25, 0.25); }, Domain::away_from_zero},
      {"where", broadcast_pair(),
       [](S x) { return where(greater(x[0], scalar_like(x[0], 0.0)), x[0] * x[0], x[1]); }, Domain::away_from_zero},
      {"chain_tanh_mul_add", broadcast_pair(), [](S x) { return tanh(x[0] * x[1] + x[0]); }},
  };
}

}  // namespace recur::testing
