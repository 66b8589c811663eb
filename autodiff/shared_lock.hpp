#pragma once
// SharedLock: the locks of several Shared variables held together, for reads or writes
// that must form one state. An optimizer step writes its parameters and buffers under one;
// save_checkpoint reads under one: a checkpoint saved while another thread steps holds the
// state before that step or after it, never part of each. A Shared's own reads and
// writes take its lock one at a time, so they too see each variable before or after.
#include <mutex>
#include <vector>

#include <recur/autodiff/shared.hpp>
#include <recur/core/non_copyable.hpp>

namespace recur {

class SharedLock : NonCopyable {
 public:
  // Locks every variable (a repeat is locked once) in one global order, so two SharedLocks
  // over overlapping sets on two threads never deadlock. A null handle: ValueError.
  explicit SharedLock(std::vector<Shared> variables);

  // While the lock lives, the variables are read and written through it: their own
  // methods would wait for this very lock. A variable not locked here: ValueError.
  Tensor value(const Shared& s) const;
  // A buffer to write in place, as Shared::update gives: copied first when a reader or a
  // tape still holds it, so they keep the old value. Bumps the version.
  Tensor writable(const Shared& s) const;
  // As Shared::assign (same checks).
  void assign(const Shared& s, const Tensor& value) const;

 private:
  Shared& locked(const Shared& s) const;
  mutable std::vector<Shared> variables_;  // sorted by identity()
  std::vector<std::unique_lock<std::mutex>> locks_;
};

}  // namespace recur
