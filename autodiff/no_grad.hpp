#pragma once
// Scopes that switch recording of gradients off (and back on) for the current thread.
// Under NoGrad, ops on Vars still compute their values but record no backward link.
#include <recur/core/non_copyable.hpp>

namespace recur {

bool grad_enabled();

namespace detail {
// Sets grad_enabled() to `Enabled` for the current thread while it lives, then restores
// the setting it found (so scopes nest).
template <bool Enabled>
class GradMode : NonCopyable {
 public:
  GradMode();
  ~GradMode();

 private:
  bool previous_;
};
extern template class GradMode<false>;
extern template class GradMode<true>;
}  // namespace detail

class NoGrad : public detail::GradMode<false> {};
class EnableGrad : public detail::GradMode<true> {};

}  // namespace recur
