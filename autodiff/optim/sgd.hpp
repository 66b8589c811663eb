#pragma once
// SGD as torch.optim.SGD (PyTorch 1.13), per parameter p with gradient g:
//   g <- g + weight_decay * p                                  (when weight_decay != 0)
//   b <- g on the parameter's first step, else momentum * b + (1 - dampening) * g
//   g <- g + momentum * b (nesterov) or b                       (when momentum != 0)
//   p <- p - lr * g
// State buffer: "momentum_buffer" (only when momentum != 0).
#include <limits>

#include <recur/autodiff/optim/optimizer.hpp>

namespace recur::optim {

struct SGDOptions {
  double lr = std::numeric_limits<double>::quiet_NaN();  // required, as in PyTorch
  double momentum = 0;
  double dampening = 0;
  double weight_decay = 0;
  bool nesterov = false;
};

// SGD(parameters, options): ValueError naming "SGD" and the argument: lr missing or < 0, momentum < 0,
// weight_decay < 0, nesterov without momentum > 0 and dampening == 0.
RECUR_DECLARE_OPTIMIZER(SGD, SGDOptions);

}  // namespace recur::optim
