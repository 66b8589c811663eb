#include <recur/autodiff/shared.hpp>

#include <mutex>

#include <recur/core/creation.hpp>
#include <recur/core/elementwise.hpp>

namespace recur {
namespace detail {
struct SharedState {
  std::string name;
  Shape shape;
  DType dtype;
  mutable std::mutex mutex;
  Tensor value;
  Tensor grad;
  std::uint64_t version = 0;
};
}  // namespace detail

Shared::Shared(Tensor value, std::string name) : state_(std::make_shared<detail::SharedState>()) {
  if (!value.defined()) fail<ValueError>("Shared", "the initial value of '", name, "' is undefined");
  state_->name = std::move(name);
  state_->shape = value.shape();
  state_->dtype = value.dtype();
  state_->value = std::move(value);
}

detail::SharedState& Shared::state() const {
  if (!state_) fail<ValueError>("Shared", "use of a null Shared handle");
  return *state_;
}

const std::string& Shared::name() const { return state().name; }
const Shape& Shared::shape() const { return state().shape; }
DType Shared::dtype() const { return state().dtype; }

Tensor Shared::value() const {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.value;
}

std::pair<Tensor, std::uint64_t> Shared::snapshot() const {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return {s.value, s.version};
}

std::uint64_t Shared::version() const {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.version;
}

void Shared::check_assignable(std::string_view op, const Tensor& value) const {
  auto& s = state();
  if (!value.defined()) fail<ValueError>(op, "the new value of '", s.name, "' is undefined");
  if (value.shape() != s.shape)
    fail<ShapeError>(op, "'", s.name, "' has shape ", to_string(s.shape), ", the new value has shape ",
                     to_string(value.shape()));
  if (value.dtype() != s.dtype) fail<DTypeError>(op, "'", s.name, "' is ", s.dtype, ", the new value is ", value.dtype());
}

void Shared::assign(const Tensor& value) {
  check_assignable("Shared::assign", value);
  auto lock = lock_for_update();
  assign_locked(value);
}

Tensor Shared::value_locked() const { return state_->value; }

void Shared::assign_locked(const Tensor& value) {
  state_->value = value;
  ++state_->version;
}

Tensor Shared::mutable_value() {
  auto lock = lock_for_update();
  return unique_value_locked();
}

std::unique_lock<std::mutex> Shared::lock_for_update() const { return std::unique_lock(state().mutex); }

Tensor Shared::unique_value_locked() {
  auto& s = *state_;
  // One reference here and one in the caller's hands would make two: copy unless we are the
  // only holder of the buffer.
  if (!s.value.storage()->unique()) s.value = s.value.clone();
  ++s.version;
  return s.value;
}

Tensor Shared::unique_grad_locked() {
  auto& s = *state_;
  if (s.grad.defined() && !s.grad.storage()->unique()) s.grad = s.grad.clone();
  return s.grad;
}

Tensor Shared::grad() const {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.grad.defined() ? s.grad : zeros(s.shape, s.dtype);
}

bool Shared::has_grad() const {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  return s.grad.defined();
}

void Shared::zero_grad() {
  auto& s = state();
  std::lock_guard lock(s.mutex);
  s.grad = Tensor();
}

void Shared::accumulate_grad(const Tensor& g) {
  auto& s = state();
  if (g.shape() != s.shape || g.dtype() != s.dtype)
    fail<GradientError>("Shared::accumulate_grad", "'", s.name, "' is ", s.dtype, " of shape ",
                        to_string(s.shape), ", the gradient is ", g.dtype(), " of shape ",
                        to_string(g.shape()));
  std::lock_guard lock(s.mutex);
  accumulate_into(s.grad, g);
}

}  // namespace recur
