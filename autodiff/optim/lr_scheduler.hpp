#pragma once
// Learning-rate schedules as torch.optim.lr_scheduler (PyTorch 1.13), in the closed forms
// that the chainable ones give when nothing else changes the learning rate. A schedule
// reads the optimizer's learning rate at construction as base_lr (epoch 0, lr unchanged);
// each step() advances one epoch and sets the optimizer's lr to lr_at(epoch). The
// optimizer must outlive the schedule.
//
// State for training checkpoints (named_state): "base_lr" (float64 scalar) and
// "last_epoch" (int64 scalar); assigning saved values resumes the schedule.
#include <cstdint>
#include <functional>

#include <recur/autodiff/optim/optimizer.hpp>
#include <recur/core/non_copyable.hpp>

namespace recur::optim {

// A schedule is its closed form lr(base_lr, epoch); StepLR and the others only check their
// hyperparameters and pass the form they give.
class LRScheduler : NonCopyable {  // two copies would advance one epoch count
 public:
  // The learning rate at `epoch` (>= 0) from base_lr.
  using Schedule = std::function<double(double base_lr, std::int64_t epoch)>;

  virtual ~LRScheduler() = default;

  void step();
  std::int64_t last_epoch() const;
  double base_lr() const;
  NamedShared named_state() const;
  // The learning rate the schedule gives at `epoch` (>= 0) from base_lr().
  double lr_at(std::int64_t epoch) const { return schedule_(base_lr(), epoch); }

 protected:
  LRScheduler(Optimizer& optimizer, Schedule schedule);

 private:
  Optimizer* optimizer_;
  Schedule schedule_;
  Shared base_lr_, last_epoch_;
};

// base_lr * gamma^floor(epoch / step_size). ValueError unless step_size >= 1 and gamma >= 0 (finite).
class StepLR : public LRScheduler {
 public:
  StepLR(Optimizer& optimizer, std::int64_t step_size, double gamma = 0.1);
};

// base_lr * gamma^epoch. ValueError unless gamma >= 0 (finite).
class ExponentialLR : public LRScheduler {
 public:
  ExponentialLR(Optimizer& optimizer, double gamma);
};

// eta_min + (base_lr - eta_min) * (1 + cos(pi * epoch / t_max)) / 2, which keeps going
// (back up after t_max) as PyTorch's does. ValueError unless t_max >= 1 and eta_min >= 0 (finite).
class CosineAnnealingLR : public LRScheduler {
 public:
  CosineAnnealingLR(Optimizer& optimizer, std::int64_t t_max, double eta_min = 0);
};

}  // namespace recur::optim
