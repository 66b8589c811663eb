#include <recur/autodiff/optim/adagrad.hpp>

#include <cmath>

namespace recur::optim {

template <>
OptimizerOf<AdagradOptions>::OptimizerOf(NamedShared parameters, AdagradOptions options)
    : OptimizerWithOptions("Adagrad", std::move(parameters), options,
                           {{"sum", true, options.initial_accumulator_value}}) {
  check_hyperparameter("Adagrad", "lr_decay", options.lr_decay >= 0, ">= 0", options.lr_decay);
  check_hyperparameter("Adagrad", "weight_decay", options.weight_decay >= 0, ">= 0", options.weight_decay);
  check_hyperparameter("Adagrad", "initial_accumulator_value", options.initial_accumulator_value >= 0, ">= 0",
                 options.initial_accumulator_value);
  check_hyperparameter("Adagrad", "eps", options.eps >= 0, ">= 0", options.eps);
}

template <>
void OptimizerOf<AdagradOptions>::update(Slot& slot, const Tensor& grad, std::int64_t t, double lr) {
  const AdagradOptions o = options();
  const double clr = lr / (1 + static_cast<double>(t - 1) * o.lr_decay);
  detail::with_flags([&](auto decay) {
    update_elements(slot, grad, [=](auto& p, auto g, auto& sum) {
      using T = std::remove_cvref_t<decltype(p)>;
      if constexpr (decay) g += T(o.weight_decay) * p;
      sum += g * g;
      p += T(-clr) * g / (std::sqrt(sum) + T(o.eps));
    }, slot.buffers[0]);
  }, o.weight_decay != 0);
}

}  // namespace recur::optim
