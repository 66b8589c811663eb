#pragma once
// Internal to the scan engine (engine.cpp): how a run keeps what backward needs. The engine
// runs the loop once and tells its policy of each iteration as it ends and of the loop's
// end; each policy is one small piece (memory_policy.cpp):
//   values only   no gradients: each iteration's nodes are dropped, its carries kept as
//                 constants (memory does not grow with the steps);
//   full tape     every node kept;
//   segments      Checkpoint::every_k / auto_sqrt: every k-th carry kept, the values
//                 between released, recomputed by backward one segment at a time;
//   revolve       Checkpoint::snapshots / budget: a chain reversed with few snapshots.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <recur/autodiff/tape.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::scan_engine::detail {

// What a policy asks of the running loop.
class LoopState {
 public:
  // The state after the last iteration: what the next one reads, its outputs and updates.
  virtual std::vector<std::uint32_t> carried_nodes() const = 0;
  // Those and every stacked output so far: what later iterations or the results need.
  virtual std::vector<std::uint32_t> live_nodes() const = 0;
  // The values the last iteration added to stacked outputs.
  virtual std::vector<std::uint32_t> new_results() const = 0;
  // Drops the nodes recorded since the loop began, keeping the carried values as constants.
  virtual void compact() = 0;

 protected:
  ~LoopState() = default;
};

class MemoryPolicy {
 public:
  virtual ~MemoryPolicy() = default;
  // Iteration t has been recorded (the tape ends with it); `last`: none follows.
  virtual void iteration_recorded(LoopState& loop, std::int64_t t, bool last) = 0;
  // The loop ended after `steps` iterations (before truncation cuts anything).
  virtual void loop_ended(LoopState& loop, std::int64_t steps) = 0;
  // Values were released: the stacked outputs take the released nodes' place.
  virtual bool releases() const = 0;
  // Every value stays where backward finds it (nothing is released or replayed): a captured
  // step may drop the buffers no rule reads (StepReplay::drop_unread).
  virtual bool full_tape() const { return false; }
  // The memory report's words for it: "full tape", "every_k(4)", "snapshots(3)", ...
  virtual std::string text() const = 0;
};

// The policy of a run of `steps` iterations from tape node `begin` on (the loop's first
// node); `recording`: gradients are on.
std::unique_ptr<MemoryPolicy> choose_policy(Tape& tape, std::uint32_t begin, const Checkpoint& checkpoint,
                                            std::int64_t steps, bool recording);

}  // namespace recur::scan_engine::detail
