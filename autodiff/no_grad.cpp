#include <recur/autodiff/no_grad.hpp>

namespace recur {
namespace {
thread_local bool enabled = true;
}
bool grad_enabled() { return enabled; }
NoGrad::NoGrad() : previous_(enabled) { enabled = false; }
NoGrad::~NoGrad() { enabled = previous_; }
EnableGrad::EnableGrad() : previous_(enabled) { enabled = true; }
EnableGrad::~EnableGrad() { enabled = previous_; }
}  // namespace recur
