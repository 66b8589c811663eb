#pragma once
// BackwardObserver: learns, during a backward pass on this thread, when each Shared's
// gradient from that pass is final, so that work on it (a data-parallel all-reduce) can
// start while the rest of the pass runs, as PyTorch DDP's gradient hooks do.
//
// A Shared's gradient is final once the reverse loop has gone below every node of the tape
// that reads it: no later node can add to it. Only Tape::backward reports (grad() delivers
// nothing); Shareds the tape never read are not reported.
#include <recur/autodiff/shared.hpp>
#include <recur/core/non_copyable.hpp>

namespace recur {

class BackwardObserver {
 public:
  virtual ~BackwardObserver() = default;
  // `shared` has received its last gradient contribution from the pass (possibly none).
  virtual void gradient_final(const Shared& shared) = 0;
  // Called after each op node's backward rule: a chance to poll communication.
  virtual void between_nodes() {}
};

// Makes `observer` the observer of this thread's backward passes while it lives, then
// restores the one it found (scopes nest; an inner one hides the outer).
class ObserveBackward : NonCopyable {
 public:
  explicit ObserveBackward(BackwardObserver& observer);
  ~ObserveBackward();

 private:
  BackwardObserver* previous_;
};

// The observer of this thread's backward passes, or nullptr.
BackwardObserver* backward_observer();

}  // namespace recur
