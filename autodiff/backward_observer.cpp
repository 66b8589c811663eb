#include <recur/autodiff/backward_observer.hpp>

namespace recur {
namespace {
thread_local BackwardObserver* current = nullptr;
}

BackwardObserver* backward_observer() { return current; }

ObserveBackward::ObserveBackward(BackwardObserver& observer) : previous_(current) { current = &observer; }

ObserveBackward::~ObserveBackward() { current = previous_; }

}  // namespace recur
