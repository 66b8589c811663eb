#pragma once
// RMSprop as torch.optim.RMSprop (PyTorch 1.13), per parameter p with gradient g:
//   g <- g + weight_decay * p                         (when weight_decay != 0)
//   s <- alpha * s + (1 - alpha) * g^2
//   centered: a <- alpha * a + (1 - alpha) * g;  d = sqrt(s - a^2) + eps;  else d = sqrt(s) + eps
//   momentum > 0: b <- momentum * b + g / d;  p <- p - lr * b;   else p <- p - lr * g / d
// State buffers: "square_avg", "momentum_buffer" (momentum > 0), "grad_avg" (centered).
#include <recur/autodiff/optim/optimizer.hpp>

namespace recur::optim {

struct RMSpropOptions {
  double lr = 1e-2;
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
};

// RMSprop(parameters, options): ValueError naming "RMSprop" and the argument: lr, alpha, eps, weight_decay or
// momentum < 0.
RECUR_DECLARE_OPTIMIZER(RMSprop, RMSpropOptions);

}  // namespace recur::optim
