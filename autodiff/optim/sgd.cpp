#include <recur/autodiff/optim/sgd.hpp>

namespace recur::optim {

template <>
OptimizerOf<SGDOptions>::OptimizerOf(NamedShared parameters, SGDOptions options)
    : OptimizerWithOptions("SGD", std::move(parameters), options,
                           {{"momentum_buffer", options.momentum != 0}}) {
  check_hyperparameter("SGD", "momentum", options.momentum >= 0, ">= 0", options.momentum);
  check_hyperparameter("SGD", "dampening", true, "", options.dampening);
  check_hyperparameter("SGD", "weight_decay", options.weight_decay >= 0, ">= 0", options.weight_decay);
  if (options.nesterov && !(options.momentum > 0 && options.dampening == 0))
    fail<ValueError>("SGD", "argument 'nesterov' requires momentum > 0 and dampening == 0, got momentum ",
                     options.momentum, " and dampening ", options.dampening);
}

template <>
void OptimizerOf<SGDOptions>::update(Slot& slot, const Tensor& grad, std::int64_t t, double lr) {
  const SGDOptions o = options();
  detail::with_flags([&](auto decay, auto momentum, auto nesterov, auto first) {
    update_elements(slot, grad, [=](auto& p, auto g, auto& buffer) {
      using T = std::remove_cvref_t<decltype(p)>;
      if constexpr (decay) g += T(o.weight_decay) * p;
      if constexpr (momentum) {
        if constexpr (first)
          buffer = g;
        else
          buffer = T(o.momentum) * buffer + T(1 - o.dampening) * g;
        if constexpr (nesterov)
          g += T(o.momentum) * buffer;
        else
          g = buffer;
      }
      p -= T(lr) * g;
    }, unused_unless<momentum>(slot.buffers[0]));
  }, o.weight_decay != 0, o.momentum != 0, o.nesterov, t == 1);
}

}  // namespace recur::optim
