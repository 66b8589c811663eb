#include <recur/autodiff/no_grad.hpp>

namespace recur {
namespace {
thread_local bool enabled = true;
}
bool grad_enabled() { return enabled; }

namespace detail {
template <bool Enabled>
GradMode<Enabled>::GradMode() : previous_(enabled) {
  enabled = Enabled;
}
template <bool Enabled>
GradMode<Enabled>::~GradMode() {
  enabled = previous_;
}
template class GradMode<false>;
template class GradMode<true>;
}  // namespace detail
}  // namespace recur
