#pragma once
// Shared: a persistent, named value that outlives tapes (parameters, optimizer state, the
// state of a random stream). Any tape may read it; gradients from every backward pass that
// reaches it accumulate in its gradient until zero_grad(). Its version counts changes, so a
// tape can tell when a value it read was changed before its backward pass.
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include <recur/core/tensor.hpp>

namespace recur {

namespace detail {
struct SharedState;
}

class Shared {
 public:
  Shared() = default;  // null handle
  explicit Shared(Tensor value, std::string name = "");

  bool defined() const { return static_cast<bool>(state_); }
  const std::string& name() const;
  Tensor value() const;
  // The value and the version it belongs to, read together (another thread may be
  // assigning): what a tape records when it reads the variable.
  std::pair<Tensor, std::uint64_t> snapshot() const;
  const Shape& shape() const;
  DType dtype() const;
  std::uint64_t version() const;

  // Replaces the value; shape and dtype must stay as they were (ShapeError / DTypeError).
  void assign(const Tensor& value);
  // A buffer the caller may write in place (optimizer steps). Tapes that read the old
  // value keep it: the buffer is copied first when anyone else still holds it. Bumps the
  // version.
  Tensor mutable_value();
  // Writes the value in place under the variable's lock: write(buffer) gets a buffer no
  // tape holds (copied first if one does), and the version is bumped. Unlike
  // mutable_value, safe while tapes on other threads read the variable.
  template <class Write>
  void update(Write&& write) {
    auto lock = lock_for_update();
    Tensor buffer = unique_value_locked();
    write(buffer);
  }

  // The accumulated gradient; zeros when nothing has been accumulated since zero_grad().
  Tensor grad() const;
  bool has_grad() const;
  void zero_grad();
  // Adds g to the gradient (thread-safe: tapes on several threads may accumulate at once).
  void accumulate_grad(const Tensor& g);
  // Writes the gradient in place under the variable's lock (gradient clipping):
  // write(buffer) gets a buffer nothing else holds (copied first if a tape or a caller of
  // grad() still holds it). Does nothing when there is no gradient (has_grad() false).
  // The version stays: it counts changes of the value, not of the gradient.
  template <class Write>
  void update_grad(Write&& write) {
    auto lock = lock_for_update();
    Tensor buffer = unique_grad_locked();
    if (buffer.defined()) write(buffer);
  }

  friend bool operator==(const Shared& a, const Shared& b) { return a.state_ == b.state_; }
  const void* identity() const { return state_.get(); }

 private:
  friend class SharedLock;  // holds the locks of several variables (shared_lock.hpp)
  detail::SharedState& state() const;
  std::unique_lock<std::mutex> lock_for_update() const;
  // ShapeError / DTypeError naming `op` unless `value` may replace the current value.
  void check_assignable(std::string_view op, const Tensor& value) const;
  // With the lock held: the value; a new value (checked), version bumped.
  Tensor value_locked() const;
  void assign_locked(const Tensor& value);
  Tensor unique_value_locked();  // with the lock held: a unique buffer, version bumped
  Tensor unique_grad_locked();   // with the lock held: the gradient in a unique buffer, or undefined
  std::shared_ptr<detail::SharedState> state_;
};

}  // namespace recur
