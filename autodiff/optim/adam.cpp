#include <recur/autodiff/optim/adam.hpp>

#include <cmath>

namespace recur::optim {

Adam::Adam(NamedShared parameters, AdamOptions options) : Adam("Adam", std::move(parameters), options, false) {}

Adam::Adam(std::string name, NamedShared parameters, const AdamOptions& options, bool decoupled)
    : Optimizer(name, std::move(parameters), options.lr,
                {{"exp_avg"}, {"exp_avg_sq"}, {"max_exp_avg_sq", options.amsgrad}}),
      options_(options),
      decoupled_(decoupled) {
  const auto [beta1, beta2] = options.betas;
  check_hyperparameter(name, "eps", options.eps >= 0, ">= 0", options.eps);
  check_hyperparameter(name, "betas[0]", beta1 >= 0 && beta1 < 1, "in [0, 1)", beta1);
  check_hyperparameter(name, "betas[1]", beta2 >= 0 && beta2 < 1, "in [0, 1)", beta2);
  check_hyperparameter(name, "weight_decay", options.weight_decay >= 0, ">= 0", options.weight_decay);
}

void Adam::update(Slot& slot, const Tensor& grad, std::int64_t t, double lr) {
  const double beta1 = options_.betas.first, beta2 = options_.betas.second;
  const double wd = options_.weight_decay, eps = options_.eps;
  // PyTorch computes these per step in double precision (Python floats).
  const double step_size = lr / (1 - std::pow(beta1, static_cast<double>(t)));
  const double bias_correction2_sqrt = std::sqrt(1 - std::pow(beta2, static_cast<double>(t)));
  detail::with_flags([&](auto decoupled, auto decay, auto amsgrad) {
    update_elements(slot, grad, [=](auto& p, auto g, auto& m, auto& v, auto& v_max) {
      using T = std::remove_cvref_t<decltype(p)>;
      if constexpr (decoupled)
        p *= T(1 - lr * wd);
      else if constexpr (decay)
        g += T(wd) * p;
      m = T(beta1) * m + T(1 - beta1) * g;
      v = T(beta2) * v + T(1 - beta2) * g * g;
      T second = v;
      if constexpr (amsgrad) second = v_max = (v > v_max || v != v) ? v : v_max;  // NaN wins, as in torch.maximum
      const T denom = std::sqrt(second) / T(bias_correction2_sqrt) + T(eps);
      p += T(-step_size) * m / denom;
    }, slot.buffers[0], slot.buffers[1], unused_unless<amsgrad>(slot.buffers[2]));
  }, decoupled_, wd != 0, options_.amsgrad);
}

AdamW::AdamW(NamedShared parameters, AdamWOptions options)
    : Adam("AdamW", std::move(parameters),
           AdamOptions{options.lr, options.betas, options.eps, options.weight_decay, options.amsgrad}, true) {}

}  // namespace recur::optim
