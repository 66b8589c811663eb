#include <recur/autodiff/optim/optimizer.hpp>

#include <recur/core/creation.hpp>
#include <recur/core/error.hpp>

namespace recur::optim {

namespace {

std::int64_t read_count(const Tensor& count) { return count.item<std::int64_t>(); }

// Empty lists, nulls, int64 parameters and repeats, before any state is made.
void check_parameters(const std::string& op, const NamedShared& parameters) {
  if (parameters.empty()) fail<ValueError>(op, "got an empty parameter list");
  for (std::size_t i = 0; i < parameters.size(); ++i) {
    const auto& [name, p] = parameters[i];
    if (!p.defined()) fail<ValueError>(op, "parameter '", name, "' is a null Shared");
    if (!is_floating(p.dtype()))
      fail<DTypeError>(op, "parameter '", name, "' is ", p.dtype(), "; expects float32 or float64");
    for (std::size_t j = 0; j < i; ++j) {
      if (parameters[j].first == name) fail<ValueError>(op, "parameter name '", name, "' appears twice");
      if (parameters[j].second == p)
        fail<ValueError>(op, "parameters '", parameters[j].first, "' and '", name, "' are one Shared");
    }
  }
}

}  // namespace

Optimizer::Optimizer(std::string name, NamedShared parameters, double lr, const std::vector<Buffer>& buffers)
    : name_(std::move(name)), parameters_(std::move(parameters)) {
  check_hyperparameter(name_, "lr", lr >= 0, ">= 0", lr);
  check_parameters(name_, parameters_);
  step_ = Shared(scalar(0, DType::int64), "step");
  lr_ = Shared(scalar(lr, DType::float64), "lr");
  for (const auto& b : buffers) buffer_names_.push_back(b.name);
  slots_.reserve(parameters_.size());
  for (const auto& [pname, p] : parameters_) {
    Slot slot{p, Shared(scalar(0, DType::int64), pname + ".step"), {}};
    for (const auto& b : buffers)
      slot.buffers.push_back(b.used ? Shared(full(p.shape(), b.initial, p.dtype()), pname + "." + b.name)
                                    : Shared());
    slots_.push_back(std::move(slot));
  }
  variables_ = {step_, lr_};
  for (const Slot& slot : slots_) {
    variables_.push_back(slot.param);
    variables_.push_back(slot.step);
    for (const Shared& b : slot.buffers)
      if (b.defined()) variables_.push_back(b);
  }
}

void Optimizer::step() {
  // The gradients first: reading them takes the parameters' locks, which the step holds.
  std::vector<Tensor> grads;
  grads.reserve(slots_.size());
  for (const Slot& slot : slots_) grads.push_back(slot.param.has_grad() ? slot.param.grad() : Tensor());

  const SharedLock lock(variables_);
  stepping_ = &lock;
  struct Done {
    const SharedLock*& stepping;
    ~Done() { stepping = nullptr; }
  } done{stepping_};
  const double rate = lock.value(lr_).item<double>();
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    if (!grads[i].defined()) continue;
    increment(slots_[i].step);
    update(slots_[i], grads[i], read_count(lock.value(slots_[i].step)), rate);
  }
  increment(step_);
}

void Optimizer::increment(const Shared& counter) const { ++*writable(counter).data<std::int64_t>(); }

void Optimizer::zero_grad() {
  for (auto& [name, p] : parameters_) p.zero_grad();
}

double Optimizer::lr() const { return lr_.value().item<double>(); }

void Optimizer::set_lr(double lr) {
  check_hyperparameter(name_ + "::set_lr", "lr", lr >= 0, ">= 0", lr);
  lr_.assign(scalar(lr, DType::float64));
}

std::int64_t Optimizer::steps() const { return read_count(step_.value()); }

NamedShared Optimizer::named_state() const {
  NamedShared out{{"step", step_}, {"lr", lr_}};
  for (std::size_t i = 0; i < slots_.size(); ++i) {
    const std::string& pname = parameters_[i].first;
    out.emplace_back(pname + ".step", slots_[i].step);
    for (std::size_t b = 0; b < buffer_names_.size(); ++b)
      if (slots_[i].buffers[b].defined()) out.emplace_back(pname + "." + buffer_names_[b], slots_[i].buffers[b]);
  }
  return out;
}

}  // namespace recur::optim
