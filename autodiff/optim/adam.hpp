#pragma once
// Adam and AdamW as torch.optim.Adam / AdamW (PyTorch 1.13), per parameter p with
// gradient g at its step t:
//   Adam:  g <- g + weight_decay * p (when weight_decay != 0)    AdamW: p <- p * (1 - lr * weight_decay)
//   m <- beta1 * m + (1 - beta1) * g;  v <- beta2 * v + (1 - beta2) * g^2
//   amsgrad: v_max <- max(v_max, v), used in place of v below
//   p <- p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)
// State buffers: "exp_avg", "exp_avg_sq", and "max_exp_avg_sq" when amsgrad.
#include <utility>

#include <recur/autodiff/optim/optimizer.hpp>

namespace recur::optim {

// Adam's and AdamW's options differ only in the default weight decay.
template <class Defaults>
struct AdamFamilyOptions {
  double lr = 1e-3;
  std::pair<double, double> betas{0.9, 0.999};
  double eps = 1e-8;
  double weight_decay = Defaults::weight_decay;
  bool amsgrad = false;
};
struct AdamDefaults {
  static constexpr double weight_decay = 0;
};
struct AdamWDefaults {
  static constexpr double weight_decay = 1e-2;
};
using AdamOptions = AdamFamilyOptions<AdamDefaults>;
using AdamWOptions = AdamFamilyOptions<AdamWDefaults>;

class Adam : public Optimizer {
 public:
  // ValueError naming "Adam" and the argument: lr < 0, eps < 0, a beta outside [0, 1),
  // weight_decay < 0.
  Adam(NamedShared parameters, AdamOptions options = {});

 protected:
  // AdamW: the same moments with the weight decay applied to the parameter (decoupled).
  Adam(std::string name, NamedShared parameters, const AdamOptions& options, bool decoupled);
  void update(Slot& slot, const Tensor& grad, std::int64_t t, double lr) override;

 private:
  AdamOptions options_;
  bool decoupled_;
};

class AdamW : public Adam {
 public:
  // As Adam's, naming "AdamW".
  AdamW(NamedShared parameters, AdamWOptions options = {});
};

}  // namespace recur::optim
