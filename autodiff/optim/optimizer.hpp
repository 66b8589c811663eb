#pragma once
// Optimizer: the base of the torch.optim rules (SGD, Adam, AdamW, RMSprop, Adagrad), with
// PyTorch 1.13's semantics for one parameter group. Every piece of state lives in a Shared
// variable, so a step is a shared-variable update and a training checkpoint saves and
// restores it by value through named_state():
//   "step"              int64 scalar: calls of step() so far (steps())
//   "lr"                float64 scalar: the learning rate (schedules change it)
//   "<param>.step"      int64 scalar: steps that updated this parameter
//   "<param>.<buffer>"  a buffer of the parameter's shape and dtype, named as in
//                       torch.optim's state, e.g. "lstm.weight_ih_l0.exp_avg"
// A rule's buffers exist only when its options use them (no "momentum_buffer" without
// momentum). step() skips a parameter without a gradient (has_grad() false) and leaves its
// state alone, as PyTorch skips a parameter whose .grad is None; the per-parameter step
// count keeps Adam's bias corrections and SGD's first momentum step exactly as PyTorch's.
// Every hyperparameter (of a rule or a schedule) must be a finite number: infinity and NaN
// are a ValueError naming it, like a negative value.
// Threads: a step holds the locks of all the optimizer's variables (its parameters and
// state) together (SharedLock), so reading the state on another thread while it runs
// (named_state() values, save_checkpoint) is safe and sees it before the step or after.
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include <recur/autodiff/module.hpp>
#include <recur/autodiff/optim/check_argument.hpp>
#include <recur/autodiff/optim/for_each_element.hpp>
#include <recur/autodiff/shared_lock.hpp>
#include <recur/core/non_copyable.hpp>

namespace recur::optim {

class Optimizer : NonCopyable {  // two copies would step one state
 public:
  virtual ~Optimizer() = default;

  // Updates every parameter that has a gradient, then counts the step.
  void step();
  // Drops every parameter's gradient (PyTorch's zero_grad(set_to_none=True)).
  void zero_grad();
  double lr() const;
  void set_lr(double lr);  // ValueError unless lr is finite and >= 0
  std::int64_t steps() const;
  // Every state variable (see the top of this file), in a fixed order: "step", "lr", then
  // per parameter "<param>.step" and its buffers. Assigning saved values restores the state.
  NamedShared named_state() const;
  const NamedShared& named_parameters() const { return parameters_; }
  const std::string& name() const { return name_; }

 protected:
  struct Buffer {
    std::string name;       // torch.optim's state key
    bool used = true;       // false: the options leave it out
    double initial = 0.0;   // its value before the first step
  };
  // One parameter's state: buffers in the order the rule declared them, undefined if unused.
  struct Slot {
    Shared param, step;
    std::vector<Shared> buffers;
  };

  // Throws (naming `name`) for an empty list, a null, non-floating or repeated parameter,
  // a repeated name, or lr < 0 or not finite. `buffers` is the same for every parameter.
  Optimizer(std::string name, NamedShared parameters, double lr, const std::vector<Buffer>& buffers);

  // One parameter's update with its gradient; t counts this parameter's steps including
  // this one (1 on its first). lr is the learning rate of this step.
  virtual void update(Slot& slot, const Tensor& grad, std::int64_t t, double lr) = 0;

  // Runs rule(param, grad, buffer...) on every element, writing the parameter and the
  // buffers in place under the step's lock (buffers a reader holds are copied first). A
  // buffer the options leave out is passed as detail::Unused (see unused_unless).
  template <class Rule, class... Buffers>
  void update_elements(Slot& slot, const Tensor& grad, Rule&& rule, Buffers&&... buffers) {
    Tensor param = writable(slot.param);
    std::tuple state{writable(buffers)...};
    std::apply([&](auto&... s) { detail::for_each_element(name_, rule, param, grad, s...); }, state);
  }
  // `buffer` when Used, else detail::Unused.
  template <bool Used>
  static decltype(auto) unused_unless(Shared& buffer) {
    if constexpr (Used)
      return (buffer);
    else
      return detail::Unused{};
  }

 private:
  Tensor writable(const Shared& s) const { return stepping_->writable(s); }
  static detail::Unused writable(detail::Unused u) { return u; }
  void increment(const Shared& counter) const;

  std::string name_;
  NamedShared parameters_;
  std::vector<std::string> buffer_names_;
  std::vector<Slot> slots_;
  Shared step_, lr_;
  std::vector<Shared> variables_;        // all of the above, locked together by step()
  const SharedLock* stepping_ = nullptr;  // the lock of the step running, for update_elements
};

// A rule configured by one options struct (with its lr): keeps the options and gives them back.
template <class Options>
class OptimizerWithOptions : public Optimizer {
 public:
  const Options& options() const { return options_; }

 protected:
  OptimizerWithOptions(std::string name, NamedShared parameters, const Options& options,
                       const std::vector<Buffer>& buffers)
      : Optimizer(std::move(name), std::move(parameters), options.lr, buffers), options_(options) {}

 private:
  Options options_;
};

// An optimizer that is nothing but its options and its per-parameter rule (SGD, Adagrad,
// RMSprop). Its header says RECUR_DECLARE_OPTIMIZER(Adagrad, AdagradOptions); its .cpp
// defines the two members for OptimizerOf<AdagradOptions>: the constructor names the
// optimizer and its state buffers and checks the options; update() is the rule.
template <class Options>
class OptimizerOf final : public OptimizerWithOptions<Options> {
 public:
  explicit OptimizerOf(NamedShared parameters, Options options = {});

 protected:
  void update(Optimizer::Slot& slot, const Tensor& grad, std::int64_t t, double lr) override;
};

// `Name` is OptimizerOf<Options>, whose two members are defined in Name's .cpp.
#define RECUR_DECLARE_OPTIMIZER(Name, Options)                                        \
  using Name = OptimizerOf<Options>;                                                  \
  template <>                                                                         \
  OptimizerOf<Options>::OptimizerOf(NamedShared parameters, Options options);         \
  template <>                                                                         \
  void OptimizerOf<Options>::update(Optimizer::Slot& slot, const Tensor& grad, std::int64_t t, double lr)

}  // namespace recur::optim
