#include <recur/autodiff/optim/rmsprop.hpp>

#include <cmath>

namespace recur::optim {

template <>
OptimizerOf<RMSpropOptions>::OptimizerOf(NamedShared parameters, RMSpropOptions options)
    : OptimizerWithOptions("RMSprop", std::move(parameters), options,
                           {{"square_avg"},
                            {"momentum_buffer", options.momentum > 0},
                            {"grad_avg", options.centered}}) {
  check_hyperparameter("RMSprop", "alpha", options.alpha >= 0, ">= 0", options.alpha);
  check_hyperparameter("RMSprop", "eps", options.eps >= 0, ">= 0", options.eps);
  check_hyperparameter("RMSprop", "weight_decay", options.weight_decay >= 0, ">= 0", options.weight_decay);
  check_hyperparameter("RMSprop", "momentum", options.momentum >= 0, ">= 0", options.momentum);
}

template <>
void OptimizerOf<RMSpropOptions>::update(Slot& slot, const Tensor& grad, std::int64_t, double lr) {
  const RMSpropOptions o = options();
  detail::with_flags([&](auto decay, auto momentum, auto centered) {
    update_elements(slot, grad, [=](auto& p, auto g, auto& square_avg, auto& momentum_buffer, auto& grad_avg) {
      using T = std::remove_cvref_t<decltype(p)>;
      if constexpr (decay) g += T(o.weight_decay) * p;
      square_avg = T(o.alpha) * square_avg + T(1 - o.alpha) * g * g;
      T avg;
      if constexpr (centered) {
        grad_avg = T(o.alpha) * grad_avg + T(1 - o.alpha) * g;
        avg = std::sqrt(square_avg - grad_avg * grad_avg) + T(o.eps);
      } else {
        avg = std::sqrt(square_avg) + T(o.eps);
      }
      if constexpr (momentum) {
        momentum_buffer = T(o.momentum) * momentum_buffer + g / avg;
        p -= T(lr) * momentum_buffer;
      } else {
        p += T(-lr) * g / avg;
      }
    }, slot.buffers[0], unused_unless<momentum>(slot.buffers[1]), unused_unless<centered>(slot.buffers[2]));
  }, o.weight_decay != 0, o.momentum > 0, o.centered);
}

}  // namespace recur::optim
