// The scan engine's memory policies, one small class each (memory_policy_detail.hpp).
#include <recur/ops/scan/memory_policy_detail.hpp>

#include <algorithm>
#include <cmath>

#include <recur/autodiff/memory_report.hpp>
#include <recur/autodiff/revolve_chain_detail.hpp>
#include <recur/autodiff/tape_access.hpp>

namespace recur::scan_engine::detail {
namespace {

class ValuesOnly final : public MemoryPolicy {
 public:
  void iteration_recorded(LoopState& loop, std::int64_t, bool) override { loop.compact(); }
  void loop_ended(LoopState&, std::int64_t) override {}
  bool releases() const override { return false; }
  std::string text() const override { return "values only"; }
};

class FullTape final : public MemoryPolicy {
 public:
  void iteration_recorded(LoopState&, std::int64_t, bool) override {}
  void loop_ended(LoopState&, std::int64_t) override {}
  bool releases() const override { return false; }
  bool full_tape() const override { return true; }
  std::string text() const override { return "full tape"; }
};

// Segments of `every` iterations: at each segment's end its values are released but for
// the nodes the loop still needs (the carry into the next segment, the stacked outputs).
class Segments final : public MemoryPolicy {
 public:
  Segments(Tape& tape, std::uint32_t begin, std::int64_t every, bool automatic)
      : tape_(tape), segment_begin_(begin), every_(every), automatic_(automatic) {}
  void iteration_recorded(LoopState& loop, std::int64_t t, bool last) override {
    if ((t + 1) % every_ != 0 || last) return;
    TapeAccess::release_values(tape_, segment_begin_, tape_.size(), loop.live_nodes());
    segment_begin_ = tape_.size();
  }
  void loop_ended(LoopState& loop, std::int64_t steps) override {
    if (segment_begin_ < tape_.size() && steps > 0)
      TapeAccess::release_values(tape_, segment_begin_, tape_.size(), loop.live_nodes());
  }
  bool releases() const override { return true; }
  std::string text() const override {
    return automatic_ ? "auto_sqrt (k = " + std::to_string(every_) + ")" : "every_k(" + std::to_string(every_) + ")";
  }

 private:
  Tape& tape_;
  std::uint32_t segment_begin_;
  std::int64_t every_;
  bool automatic_;
};

// Binomial checkpointing: the iterations form a chain on the tape that backward reverses
// with few snapshots. A run that fails takes the chain off the tape with its nodes.
class Revolve final : public MemoryPolicy {
 public:
  Revolve(Tape& tape, std::uint32_t begin, const Checkpoint& c, std::int64_t steps)
      : tape_(tape),
        checkpoint_(c),
        chain_(&TapeAccess::begin_chain(tape, begin, {.snapshots = c.snapshot_count,
                                                      .budget_bytes = c.budget_bytes,
                                                      .planned_steps = steps})) {}
  Revolve(const Revolve&) = delete;
  Revolve& operator=(const Revolve&) = delete;
  ~Revolve() override {
    if (!finished_) TapeAccess::drop_chain(tape_, chain_);
  }
  void iteration_recorded(LoopState& loop, std::int64_t, bool) override {
    chain_->step_recorded(tape_.size(), loop.carried_nodes(), loop.new_results());
  }
  void loop_ended(LoopState& loop, std::int64_t) override {
    chain_->finish(loop.live_nodes());
    finished_ = true;
  }
  bool releases() const override { return true; }
  std::string text() const override {
    const std::string snapshots = "snapshots(" + std::to_string(chain_->stats().snapshots) + ")";
    return checkpoint_.snapshot_count > 0 ? snapshots
                                          : "budget(" + format_bytes(checkpoint_.budget_bytes) + ") -> " + snapshots;
  }

 private:
  Tape& tape_;
  Checkpoint checkpoint_;
  recur::detail::Chain* chain_;
  bool finished_ = false;
};

// every_k's k, or auto_sqrt's: round(sqrt(steps)), at least 1.
std::int64_t segment_length(const Checkpoint& c, std::int64_t steps) {
  if (c.automatic) return std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(steps))));
  return c.every;  // >= 0: the engine checked
}

}  // namespace

std::unique_ptr<MemoryPolicy> choose_policy(Tape& tape, std::uint32_t begin, const Checkpoint& checkpoint,
                                            std::int64_t steps, bool recording) {
  if (!recording) return std::make_unique<ValuesOnly>();
  if (checkpoint.revolve) return std::make_unique<Revolve>(tape, begin, checkpoint, steps);
  if (const std::int64_t every = segment_length(checkpoint, steps); every > 0)
    return std::make_unique<Segments>(tape, begin, every, checkpoint.automatic);
  return std::make_unique<FullTape>();
}

}  // namespace recur::scan_engine::detail
