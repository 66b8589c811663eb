#pragma once
// A chain: a loop's iterations recorded one after another on the tape, reversed by the
// binomial schedule of autodiff/revolve.hpp with at most s snapshots. The forward pass
// keeps only the states the schedule's first sweep snapshots, and the last step whole;
// backward, which walks the nodes downwards, asks for one step at a time, and the chain
// replays from the nearest snapshot, taking the snapshots the schedule takes on the way.
//
// Node values are the only storage: a snapshot of state p is the values of the nodes of
// steps before p that steps p and later read. A value is kept while a held state (a
// snapshot, the state being advanced, or the input of the step being reversed) needs it.
#include <cstdint>
#include <vector>

#include <recur/autodiff/node_store.hpp>

namespace recur::detail {

class Recompute;

struct ChainPolicy {
  std::int64_t snapshots = 0;  // s >= 1, or 0: chosen from budget_bytes after the first step
  std::size_t budget_bytes = 0;
  std::int64_t planned_steps = 0;  // the forward sweep's snapshots are placed for this many
};

struct ChainStats {
  std::int64_t snapshots = 0;       // s (decided after the first step for a budget)
  std::int64_t peak_snapshots = 0;  // most states held at once, the start included
  std::int64_t replayed_steps = 0;  // steps backward ran again
  std::int64_t steps = 0;
  // Measured on the first step, for Tape::memory_report(): what replaying one step
  // allocates (replayed_bytes of its op nodes) and one carried state (its carried nodes
  // that are not also results, which stay held anyway).
  std::size_t step_bytes = 0;
  std::size_t carry_bytes = 0;
};

class Chain {
 public:
  Chain(NodeStore& nodes, Recompute& owner, std::uint32_t begin, ChainPolicy policy);

  // ---- forward ------------------------------------------------------------------------
  // Step u ends at node `end`. `carried`: nodes later steps may read (the state after it);
  // `results`: nodes kept for good (the step's stacked outputs).
  void step_recorded(std::uint32_t end, const std::vector<std::uint32_t>& carried,
                     const std::vector<std::uint32_t>& results);
  // The loop is over; `keep`: every node the loop's results and updates need.
  void finish(const std::vector<std::uint32_t>& keep);

  std::uint32_t begin() const { return bounds_.front(); }
  std::uint32_t end() const { return bounds_.back(); }
  bool contains(std::uint32_t id) const { return id >= bounds_.front() && id < bounds_.back(); }
  const ChainStats& stats() const { return stats_; }
  bool finished() const { return finished_; }
  // For Tape::memory_report(): the most a backward adds to what the chain holds now, an
  // upper bound (see RegionMemory::replay_bytes); and what replaying all of it allocates.
  std::size_t replay_bytes() const;
  std::size_t released_bytes() const { return stats_.step_bytes * static_cast<std::size_t>(stats_.steps); }

  // ---- backward -------------------------------------------------------------------------
  // Node `id`'s step, run again with all its values (a backward rule is about to use them).
  void ensure_step_of(std::uint32_t id);
  // Node `id`'s value (an input of some rule).
  void ensure_value(std::uint32_t id);
  void release_above(std::uint32_t i);
  void release_all();

 private:
  std::int64_t step_of(std::uint32_t id) const;
  bool kept(std::uint32_t id) const;
  bool needed(std::uint32_t id, std::int64_t step) const;
  void drop(std::uint32_t id);
  void choose_snapshots(const std::vector<std::uint32_t>& carried);
  void measure_first_step(const std::vector<std::uint32_t>& carried, const std::vector<std::uint32_t>& results,
                          std::size_t inner_bytes);
  void note_held();
  // Backward: make step t's values whole (its input state restored or advanced to).
  void reverse_step(std::int64_t t);
  void advance(std::int64_t from, std::int64_t to);
  void replay(std::int64_t step);
  // Drops the values in steps [lo, hi) no held state needs.
  void tidy(std::int64_t lo, std::int64_t hi);

  NodeStore& nodes_;
  Recompute& owner_;
  ChainPolicy policy_;
  ChainStats stats_;
  std::vector<std::uint32_t> bounds_;  // step u is nodes [bounds_[u], bounds_[u+1])
  std::vector<std::uint32_t> keep_;    // sorted; never dropped
  // ---- forward state
  std::vector<std::int64_t> sweep_;         // states the first sweep snapshots
  std::vector<std::uint32_t> protected_;    // sorted; the values those snapshots hold
  std::vector<std::uint32_t> working_;      // the carried nodes of the last state (sorted)
  std::vector<std::uint32_t> previous_;     // and of the state before (the last step's input)
  bool finished_ = false;
  // ---- backward state
  std::vector<std::int64_t> last_reader_;  // per node: the last step that reads it, -1: none
  std::vector<std::int64_t> held_;         // snapshot states > 0, ascending
  std::int64_t taped_ = -1;                // the step whose values are whole
  std::int64_t current_ = -1;              // the state an advance holds
  bool holding_ = false;                   // anything recomputed or snapshotted is held
  bool fill_last_ = false;                 // the last step, kept by forward, may have gaps
};

}  // namespace recur::detail
