#include <recur/autodiff/optim/lr_scheduler.hpp>

#include <cmath>
#include <numbers>
#include <utility>

#include <recur/core/creation.hpp>

namespace recur::optim {
namespace {

// Each schedule's closed form, after its hyperparameters are checked (before anything is built).
LRScheduler::Schedule step_schedule(std::int64_t step_size, double gamma) {
  check_hyperparameter("StepLR", "step_size", step_size >= 1, ">= 1", static_cast<double>(step_size));
  check_hyperparameter("StepLR", "gamma", gamma >= 0, ">= 0", gamma);
  return [=](double base_lr, std::int64_t epoch) {
    return base_lr * std::pow(gamma, static_cast<double>(epoch / step_size));
  };
}

LRScheduler::Schedule exponential_schedule(double gamma) {
  check_hyperparameter("ExponentialLR", "gamma", gamma >= 0, ">= 0", gamma);
  return [=](double base_lr, std::int64_t epoch) { return base_lr * std::pow(gamma, static_cast<double>(epoch)); };
}

LRScheduler::Schedule cosine_schedule(std::int64_t t_max, double eta_min) {
  check_hyperparameter("CosineAnnealingLR", "t_max", t_max >= 1, ">= 1", static_cast<double>(t_max));
  check_hyperparameter("CosineAnnealingLR", "eta_min", eta_min >= 0, ">= 0", eta_min);
  return [=](double base_lr, std::int64_t epoch) {
    const double phase = std::numbers::pi * static_cast<double>(epoch) / static_cast<double>(t_max);
    return eta_min + (base_lr - eta_min) * (1 + std::cos(phase)) / 2;
  };
}

}  // namespace

LRScheduler::LRScheduler(Optimizer& optimizer, Schedule schedule)
    : optimizer_(&optimizer),
      schedule_(std::move(schedule)),
      base_lr_(scalar(optimizer.lr(), DType::float64), "base_lr"),
      last_epoch_(scalar(0, DType::int64), "last_epoch") {}

void LRScheduler::step() {
  const std::int64_t epoch = last_epoch() + 1;
  optimizer_->set_lr(lr_at(epoch));  // first: a rejected lr leaves the epoch count as it was
  last_epoch_.assign(scalar(static_cast<double>(epoch), DType::int64));
}

std::int64_t LRScheduler::last_epoch() const { return last_epoch_.value().item<std::int64_t>(); }
double LRScheduler::base_lr() const { return base_lr_.value().item<double>(); }
NamedShared LRScheduler::named_state() const { return {{"base_lr", base_lr_}, {"last_epoch", last_epoch_}}; }

StepLR::StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma)
    : LRScheduler(optimizer, step_schedule(step_size, gamma)) {}

ExponentialLR::ExponentialLR(Optimizer& optimizer, double gamma)
    : LRScheduler(optimizer, exponential_schedule(gamma)) {}

CosineAnnealingLR::CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min)
    : LRScheduler(optimizer, cosine_schedule(t_max, eta_min)) {}

}  // namespace recur::optim
