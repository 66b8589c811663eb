#pragma once
// Adagrad as torch.optim.Adagrad (PyTorch 1.13), per parameter p with gradient g at its
// step t:
//   g <- g + weight_decay * p                  (when weight_decay != 0)
//   s <- s + g^2                               (s starts at initial_accumulator_value)
//   p <- p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(s) + eps)
// State buffer: "sum".
#include <recur/autodiff/optim/optimizer.hpp>

namespace recur::optim {

struct AdagradOptions {
  double lr = 1e-2;
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
};

// Adagrad(parameters, options): ValueError naming "Adagrad" and the argument: lr, lr_decay, weight_decay,
// initial_accumulator_value or eps < 0.
RECUR_DECLARE_OPTIMIZER(Adagrad, AdagradOptions);

}  // namespace recur::optim
