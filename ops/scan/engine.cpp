#include <recur/ops/scan/engine.hpp>

#include <algorithm>
#include <cmath>
#include <limits>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/revolve_chain_detail.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/scan/lengths_mask_detail.hpp>
#include <recur/ops/scan/scan_scope_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::scan_engine {
namespace {

std::string taps_to_string(const std::vector<std::int64_t>& taps) {
  Shape s(taps.begin(), taps.end());
  return to_string(s);
}

// Output j and sequence i as the face calls them.
std::string output_name(const ScanProgram& p, std::size_t j) {
  return p.output_name ? p.output_name(j) : "output " + std::to_string(j);
}
std::string sequence_name(const ScanProgram& p, std::size_t i) {
  return p.sequence_name ? p.sequence_name(i) : "sequence " + std::to_string(i);
}

// Options that do not depend on the sequences.
void check_options(const ScanProgram& p) {
  if (p.n_steps == std::numeric_limits<std::int64_t>::min())  // its magnitude is no int64
    fail<ValueError>(p.face, p.n_steps_name, " = ", *p.n_steps, " is out of range");
  if (p.truncate_gradient < -1)
    fail<ValueError>(p.face, "truncate_gradient = ", p.truncate_gradient,
                     "; it is -1 (no truncation) or the number of steps to backpropagate through (>= 0)");
  const Checkpoint& c = p.checkpoint;
  if (c.every < 0) fail<ValueError>(p.face, "checkpoint interval ", c.every, " is negative");
  if (c.revolve && c.snapshot_count < 1 && c.budget_bytes == 0)
    fail<ValueError>(p.face, "Checkpoint::snapshots(", c.snapshot_count,
                     ") or budget(0); revolve needs at least 1 snapshot, or a budget of at least 1 byte");
  if (c.revolve && (c.every != 0 || c.automatic || (c.snapshot_count != 0 && c.budget_bytes != 0)))
    fail<ValueError>(p.face, "the checkpoint asks for several policies (every = ", c.every, ", automatic = ",
                     c.automatic, ", snapshots = ", c.snapshot_count, ", budget = ", c.budget_bytes,
                     " bytes); choose one");
}

// Taps lie within +-2^62, so that the offsets computed from them (their negation, the sum
// of the furthest back and the furthest ahead) stay inside int64.
constexpr std::int64_t kMaxTap = std::int64_t{1} << 62;

// How many past values of a fed-back output its taps read.
std::int64_t max_lag(const OutputSpec& o) { return -*std::min_element(o.taps.begin(), o.taps.end()); }

// Where a sequence's taps put iteration 0: Theano pretends tap 0 is always present, so a
// sequence with taps [-4, 0] starts at its 5th element and one with [2] at its 1st.
struct SequencePlan {
  const SequenceSpec* spec;
  std::int64_t axis;
  std::int64_t first;  // element of tap 0 at iteration 0 (= -min(taps, 0))
  std::int64_t steps;  // iterations the sequence can feed
};

struct OutputPlan {
  const OutputSpec* spec;
  bool fed_back;                   // has an initial state and taps
  std::vector<Var> history;        // initial entries, then one value per iteration
  std::optional<Shape> shape;      // every step must produce this shape...
  DType dtype = DType::float32;    // ...and dtype
  std::vector<Var> values;         // Keep::all
  std::vector<Tensor> plain;       // Keep::all without a gradient (NoGrad runs)
};

Tape& tape_of(const ScanProgram& p) {
  for (const auto& s : p.sequences)
    if (s.data.defined()) return s.data.tape();
  for (const auto& o : p.outputs)
    if (o.initial.defined()) return o.initial.tape();
  for (const auto& v : p.non_sequences)
    if (v.defined()) return v.tape();
  return Tape::current();
}

std::vector<SequencePlan> plan_sequences(const ScanProgram& p) {
  std::vector<SequencePlan> plans;
  for (std::size_t i = 0; i < p.sequences.size(); ++i) {
    const SequenceSpec& s = p.sequences[i];
    if (!s.data.defined()) fail<ValueError>(p.face, sequence_name(p, i), " is an undefined Var");
    if (s.taps.empty()) fail<ValueError>(p.face, sequence_name(p, i), " has no taps");
    if (s.data.rank() == 0)
      fail<ShapeError>(p.face, sequence_name(p, i), " is 0-d; a sequence needs a time axis");
    const std::int64_t axis = normalize_axis(p.face, s.axis, s.data.shape(), "sequence axis");
    const auto [lo, hi] = std::minmax_element(s.taps.begin(), s.taps.end());
    if (*lo < -kMaxTap || *hi > kMaxTap)
      fail<ValueError>(p.face, sequence_name(p, i), " has taps ", taps_to_string(s.taps), " beyond +-2^62");
    const std::int64_t first = -std::min<std::int64_t>(*lo, 0), last = std::max<std::int64_t>(*hi, 0);
    const std::int64_t steps = std::max<std::int64_t>(0, s.data.size(axis) - first - last);
    plans.push_back({&s, axis, first, steps});
  }
  return plans;
}

// "xs[0] of shape [3, 2]" and, for sequences with more than one axis, " along axis 0".
std::string sequence_shape(const ScanProgram& p, std::size_t i) {
  return sequence_name(p, i) + " of shape " + to_string(p.sequences[i].data.shape());
}
std::string along_axis(const SequencePlan& s) {
  return s.spec->data.rank() > 1 ? " along axis " + std::to_string(s.axis) : "";
}

// Lengths::equal: one length for all, which n_steps (if given) must be.
std::int64_t count_equal_steps(const ScanProgram& p, const std::vector<SequencePlan>& seqs) {
  if (p.n_steps && *p.n_steps < 0) fail<ValueError>(p.face, p.n_steps_name, " = ", *p.n_steps, " is negative");
  if (seqs.empty()) return *p.n_steps;
  const std::int64_t n = seqs[0].steps;
  if (std::any_of(seqs.begin(), seqs.end(), [n](const auto& s) { return s.steps != n; })) {
    std::string lengths;
    for (std::size_t i = 0; i < seqs.size(); ++i)
      lengths += (i ? "; " : "") + sequence_shape(p, i) + " has " + std::to_string(seqs[i].steps) +
                 along_axis(seqs[i]);
    fail<ValueError>(p.face, p.sequences_name, " differ in length: ", lengths);
  }
  if (p.n_steps && *p.n_steps != n)
    fail<ValueError>(p.face, p.n_steps_name, " = ", *p.n_steps, " disagrees with ", p.sequences_name, ": ",
                     sequence_shape(p, 0), " has length ", n, along_axis(seqs[0]));
  return n;
}

// Lengths::shortest: the shortest sequence, or fewer steps when n_steps asks for them.
std::int64_t count_shortest_steps(const ScanProgram& p, const std::vector<SequencePlan>& seqs) {
  if (seqs.empty()) return std::abs(*p.n_steps);
  const auto shortest = std::min_element(seqs.begin(), seqs.end(),
                                         [](const auto& a, const auto& b) { return a.steps < b.steps; });
  if (!p.n_steps) return shortest->steps;
  const std::int64_t wanted = std::abs(*p.n_steps);
  if (wanted > shortest->steps)
    fail<ValueError>(p.face, sequence_shape(p, static_cast<std::size_t>(shortest - seqs.begin())), " with taps ",
                     taps_to_string(shortest->spec->taps), " feeds only ", shortest->steps, " steps, fewer than ",
                     p.n_steps_name, " = ", wanted);
  return wanted;
}

// The number of iterations: the one place that checks the sequences' lengths.
std::int64_t count_steps(const ScanProgram& p, const std::vector<SequencePlan>& seqs) {
  if (seqs.empty() && !p.n_steps)
    fail<ValueError>(p.face, "without ", p.sequences_name, ", ", p.n_steps_name, " is required");
  return p.lengths == Lengths::equal ? count_equal_steps(p, seqs) : count_shortest_steps(p, seqs);
}

std::vector<OutputPlan> plan_outputs(const ScanProgram& p) {
  std::vector<OutputPlan> plans;
  for (std::size_t j = 0; j < p.outputs.size(); ++j) {
    const OutputSpec& o = p.outputs[j];
    OutputPlan plan{&o, o.initial.defined(), {}, {}, DType::float32, {}, {}};
    if (plan.fed_back) {
      if (o.taps.empty()) fail<ValueError>(p.face, output_name(p, j), " has an initial state but no taps");
      for (auto k : o.taps)
        if (k >= 0 || k < -kMaxTap)
          fail<ValueError>(p.face, output_name(p, j), " has tap ", k,
                           "; output taps must be negative (past values), and within 2^62");
      const std::int64_t k_max = max_lag(o);
      const Shape& s = o.initial.shape();
      if (o.initial_has_tap_axis) {
        if (s.empty() || s[0] < k_max)
          fail<ShapeError>(p.face, "the initial state of ", output_name(p, j), " has shape ", to_string(s),
                           "; taps ", taps_to_string(o.taps), " need a leading axis of at least ", k_max);
        plan.shape = s;  // without the tap axis (erase: GCC 12 misreads the iterator-range copy)
        plan.shape->erase(plan.shape->begin());
      } else {
        if (k_max != 1)
          fail<ValueError>(p.face, output_name(p, j), " uses taps ", taps_to_string(o.taps),
                           "; an initial state without a tap axis only serves tap -1");
        plan.shape = s;
      }
      plan.dtype = o.initial.dtype();
    }
    plans.push_back(std::move(plan));
  }
  return plans;
}

std::int64_t checkpoint_interval(const Checkpoint& c, std::int64_t steps) {
  if (c.automatic) return std::max<std::int64_t>(1, std::llround(std::sqrt(static_cast<double>(steps))));
  return c.every;  // >= 0: check_options
}

// Pops the scan's scope from the tape however the run ends.
struct ScopeGuard {
  Tape& tape;
  ~ScopeGuard() { TapeAccess::pop_scope(tape); }
};

// The revolve chain of a recorded run (Checkpoint::snapshots or budget); a run that fails
// takes it off the tape with its nodes.
class ChainGuard {
 public:
  ChainGuard(Tape& tape, std::uint32_t begin, const Checkpoint& c, std::int64_t steps)
      : tape_(tape),
        chain_(&TapeAccess::begin_chain(tape, begin, {.snapshots = c.snapshot_count,
                                                      .budget_bytes = c.budget_bytes,
                                                      .planned_steps = steps})) {}
  ChainGuard(const ChainGuard&) = delete;
  ChainGuard& operator=(const ChainGuard&) = delete;
  ~ChainGuard() {
    if (!finished_) TapeAccess::drop_chain(tape_, chain_);
  }
  detail::Chain& operator*() const { return *chain_; }
  void finish(const std::vector<std::uint32_t>& keep) {
    chain_->finish(keep);
    finished_ = true;
  }

 private:
  Tape& tape_;
  detail::Chain* chain_;
  bool finished_ = false;
};

class Run {
 public:
  Run(const StepFn& step, const ScanProgram& p, Tape& tape)
      : step_(step), p_(p), tape_(tape), seqs_(plan_sequences(p)), outs_(plan_outputs(p)) {
    steps_ = count_steps(p, seqs_);
    from_own_end_ = p.backwards;
    reversed_ = p.n_steps && *p.n_steps < 0;
    for (std::size_t i = 0; i < p.non_sequences.size(); ++i)
      if (!p.non_sequences[i].defined()) fail<ValueError>(p.face, "non_sequence ", i, " is an undefined Var");
    if (p.batch_lengths.given) plan_lengths();
  }

  ScanRun operator()() {
    scope_.begin = tape_.size();
    scope_.strict = p_.strict;
    for (const auto& s : p_.sequences) scope_.allowed.push_back(s.data.id());
    for (const auto& o : p_.outputs)
      if (o.initial.defined()) scope_.allowed.push_back(o.initial.id());
    for (const auto& v : p_.non_sequences) scope_.allowed.push_back(v.id());
    TapeAccess::push_scope(tape_, &scope_);
    ScopeGuard guard{tape_};

    seed_histories();
    if (steps_ == 0 && p_.infer_extra_outputs) probe();
    const bool recording = grad_enabled();
    base_ = tape_.size();
    const bool revolve = recording && p_.checkpoint.revolve;
    const std::int64_t every = recording && !revolve ? checkpoint_interval(p_.checkpoint, steps_) : 0;
    std::optional<ChainGuard> chain;
    if (revolve) chain.emplace(tape_, base_, p_.checkpoint, steps_);
    std::uint32_t segment_begin = tape_.size();
    std::vector<std::uint32_t> iteration_begin;
    std::int64_t t = 0;
    for (; t < steps_; ++t) {
      iteration_begin.push_back(tape_.size());
      const bool stop = iterate(t);
      const bool last = stop || t + 1 == steps_;
      if (!recording) {
        compact();
      } else if (chain) {
        (**chain).step_recorded(tape_.size(), carried_nodes(), new_results());
      } else if (every > 0 && (t + 1) % every == 0 && !last) {
        TapeAccess::release_values(tape_, segment_begin, tape_.size(), live_nodes());
        segment_begin = tape_.size();
      }
      if (stop) {
        ++t;
        break;
      }
    }
    if (recording && every > 0 && segment_begin < tape_.size() && t > 0)
      TapeAccess::release_values(tape_, segment_begin, tape_.size(), live_nodes());
    if (chain) chain->finish(live_nodes());
    if (recording && p_.truncate_gradient >= 0 && t > p_.truncate_gradient) {
      // Drop iterations [0, t - k): gradients stop where the last k iterations begin. With
      // lengths each element's own last k steps may begin earlier (the mask gates the rest).
      std::int64_t cut_end = t - p_.truncate_gradient;
      if (mask_) cut_end = std::min(cut_end, mask_->first_needed_iteration(tap_window()));
      const auto kept_from = static_cast<std::size_t>(cut_end);
      TapeAccess::cut_gradients(tape_, iteration_begin.front(),
                                kept_from < iteration_begin.size() ? iteration_begin[kept_from] : tape_.size());
    }
    ScanRun run = finish(t, every > 0 || revolve);
    if (recording) note_region(t, every, chain ? (**chain).stats().snapshots : 0);
    return run;
  }

  // What Tape::memory_report() says about this run: its nodes, steps and policy (with the
  // segment length `every` and the snapshots a revolve schedule chose).
  void note_region(std::int64_t steps, std::int64_t every, std::int64_t snapshots) const {
    const Checkpoint& c = p_.checkpoint;
    std::string policy = "full tape";
    if (c.revolve && c.snapshot_count > 0)
      policy = "snapshots(" + std::to_string(snapshots) + ")";
    else if (c.revolve)
      policy = "budget(" + format_bytes(c.budget_bytes) + ") -> snapshots(" + std::to_string(snapshots) + ")";
    else if (every > 0 && c.automatic)
      policy = "auto_sqrt (k = " + std::to_string(every) + ")";
    else if (every > 0)
      policy = "every_k(" + std::to_string(every) + ")";
    TapeAccess::note_region(tape_, {.info = {.name = std::string(p_.face), .steps = steps, .policy = policy},
                                    .begin = scope_.begin, .end = tape_.size()});
  }

  // Call after the scope is popped. Implicit updates are the enclosing scan's too: a stream
  // drawn in an inner scan must not repeat its draws in the outer scan's next iteration.
  void pass_implicit_updates_out(const ScanRun& run) const {
    if (RecordingScope* outer = TapeAccess::innermost_scope(tape_))
      for (const auto& shared : implicit_) outer->take_update(shared, run.updates[shared]);
  }

 private:
  // Per-element lengths: the batch axis of every sequence is the one after time, of every
  // initial state its first (after the tap axis, when there is one).
  void plan_lengths() {
    mask_.emplace(p_.face, p_.batch_lengths, steps_, from_own_end_ != reversed_, p_.truncate_gradient);
    for (std::size_t i = 0; i < seqs_.size(); ++i)
      mask_->check_batch_axis(sequence_name(p_, i), p_.sequences[i].data.shape(), seqs_[i].axis + 1);
    for (std::size_t j = 0; j < outs_.size(); ++j)
      if (outs_[j].fed_back)
        mask_->check_batch_axis("the initial state of " + output_name(p_, j), outs_[j].spec->initial.shape(),
                                outs_[j].spec->initial_has_tap_axis ? 1 : 0);
  }

  // The initial entries of each fed-back output: tap -j at iteration 0 is initial[L - j].
  void seed_histories() {
    for (auto& o : outs_) {
      if (!o.fed_back) continue;
      const OutputSpec& s = *o.spec;
      if (!s.initial_has_tap_axis) {
        o.history.push_back(s.initial);
        continue;
      }
      const std::int64_t k_max = max_lag(s);
      const std::int64_t len = s.initial.size(0);
      for (std::int64_t j = len - k_max; j < len; ++j) o.history.push_back(index(s.initial, 0, j));
    }
  }

  // The step's arguments after the sequence elements: output taps, then non-sequences.
  void push_state_args() {
    for (const auto& o : outs_)
      if (o.fed_back)
        for (auto k : o.spec->taps) args_.push_back(o.history[o.history.size() + k]);
    args_.insert(args_.end(), p_.non_sequences.begin(), p_.non_sequences.end());
  }

  // Zero steps leave nothing to learn the inferred outputs' shapes from: call the step once
  // on zeros shaped like the sequence elements (as JAX traces f, and Theano knows shapes
  // symbolically), keep only the shapes, and drop what it recorded.
  void probe() {
    NoGrad off;
    const std::uint32_t mark = tape_.size();
    args_.clear();
    for (const auto& s : seqs_) {
      Shape element = s.spec->data.shape();
      element.erase(element.begin() + s.axis);
      for (std::size_t k = 0; k < s.spec->taps.size(); ++k)
        args_.push_back(tape_.constant(zeros(element, s.spec->data.dtype())));
    }
    push_state_args();
    const StepResult r = step_(std::span<const Var>(args_.data(), args_.size()));
    check_result(r, 0);
    args_.clear();
    TapeAccess::truncate(tape_, mark);
    scope_.overrides.clear();  // draws from a random stream point there (dropped nodes)
    scope_.implicit_updates.clear();
  }

  // Where step t reads sequence s (before taps). Theano's go_backwards reverses each
  // sequence, then keeps the first steps_ of it: every sequence starts from its own end,
  // which matters when their lengths differ. A negative n_steps keeps the first steps_,
  // then reverses them; with both, the last steps_ of each sequence run forwards.
  std::int64_t position(const SequencePlan& s, std::int64_t t) const {
    if (from_own_end_) return reversed_ ? s.steps - steps_ + t : s.steps - 1 - t;
    return reversed_ || s.spec->reverse ? steps_ - 1 - t : t;
  }

  // One iteration; true when its `until` condition holds.
  bool iterate(std::int64_t t) {
    args_.clear();
    for (const auto& s : seqs_) {
      const std::int64_t pos = position(s, t);
      for (auto k : s.spec->taps) args_.push_back(index(s.spec->data, s.axis, s.first + pos + k));
    }
    push_state_args();

    StepResult r = step_(std::span<const Var>(args_.data(), args_.size()));
    check_result(r, t);
    if (mask_) mask_->begin_iteration(t);
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      OutputPlan& o = outs_[j];
      const Var& v = r.outputs[j];
      if (mask_) {
        record_masked(j, mask_->gate(v));
        continue;
      }
      if (o.fed_back) o.history.push_back(v);
      if (o.spec->keep == Keep::all) o.values.push_back(v);
      last_[j] = v;
    }
    // Updates made inside the step (random streams) first: a returned one for the same
    // Shared wins. The scope already points later reads at them.
    for (const auto& [shared, value] : scope_.implicit_updates) {
      updates_.set(shared, value);
      if (std::find(implicit_.begin(), implicit_.end(), shared) == implicit_.end()) implicit_.push_back(shared);
    }
    scope_.implicit_updates.clear();
    for (const auto& [shared, value] : r.updates) {
      updates_.set(shared, value);
      scope_.set_override(shared, value.id());
    }
    return r.until.defined() && r.until.value().item<double>() != 0;
  }

  // The most past values any fed-back output's taps read (1 without taps).
  std::int64_t tap_window() const {
    std::int64_t window = 1;
    for (const auto& o : outs_)
      if (o.fed_back) window = std::max(window, max_lag(*o.spec));
    return window;
  }

  // Output j's value v at an iteration that some elements may not run: those keep the window
  // of past values their taps read (so a tap -k reads their k-th latest own value) and show
  // zero among the stacked outputs; Keep::last returns each element's latest own value.
  void record_masked(std::size_t j, const Var& v) {
    OutputPlan& o = outs_[j];
    Var latest;
    if (o.fed_back) {
      const std::size_t end = o.history.size(), window = static_cast<std::size_t>(max_lag(*o.spec));
      std::vector<Var> shifted;
      for (std::size_t i = end - window; i + 1 < end; ++i)
        shifted.push_back(mask_->keep(o.history[i + 1], o.history[i]));
      shifted.push_back(mask_->keep(v, o.history[end - 1]));
      o.history.insert(o.history.end(), shifted.begin(), shifted.end());
      latest = o.history.back();
    } else if (o.spec->keep == Keep::last) {
      latest = mask_->keep(v, last_[j].defined() ? last_[j] : tape_.constant(zeros(v.shape(), v.dtype())));
    }
    if (o.spec->keep == Keep::all) {
      latest = mask_->zero(v);
      o.values.push_back(latest);
    }
    last_[j] = latest;
  }

  void check_result(const StepResult& r, std::int64_t t) {
    if (t == 0 && p_.infer_extra_outputs)
      while (outs_.size() < r.outputs.size()) {
        const std::size_t i = outs_.size() - p_.outputs.size();
        const OutputSpec* spec = i < p_.extra_output_specs.size() ? &p_.extra_output_specs[i] : &p_.extra_outputs;
        outs_.push_back({spec, false, {}, {}, DType::float32, {}, {}});
      }
    if (r.outputs.size() != outs_.size())
      fail<ValueError>(p_.face, "the step function returned ", r.outputs.size(), " outputs at iteration ", t,
                       "; outputs_info describes ", outs_.size());
    last_.resize(outs_.size());
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      const Var& v = r.outputs[j];
      if (!v.defined()) fail<ValueError>(p_.face, output_name(p_, j), " at iteration ", t, " is an undefined Var");
      if (&v.tape() != &tape_) fail<TapeError>(p_.face, output_name(p_, j), " at iteration ", t, " is on another tape");
      OutputPlan& o = outs_[j];
      if (!o.shape) {  // an output that is not fed back: the first step sets the rule
        o.shape = v.shape();
        o.dtype = v.dtype();
      } else if (v.shape() != *o.shape || v.dtype() != o.dtype) {
        fail<ShapeError>(p_.face, output_name(p_, j), " at iteration ", t, " is ", v.dtype(), " of shape ",
                         to_string(v.shape()), " but must keep ", o.dtype, " of shape ", to_string(*o.shape),
                         o.fed_back ? " (its initial state's)" : " (its first step's)");
      }
      if (t == 0 && mask_) mask_->check_batch_axis(output_name(p_, j) + " at iteration 0", v.shape(), 0);
      if (t == 0 && o.spec->keep == Keep::all)  // fail now, not after the whole loop
        normalize_axis(p_.face, o.spec->stack_axis, *o.shape, "stack axis of " + output_name(p_, j), 1);
    }
    for (const auto& [shared, value] : r.updates) {
      if (!value.defined() || &value.tape() != &tape_)
        fail<ValueError>(p_.face, "the update of shared variable '", shared.name(), "' at iteration ", t,
                         " is undefined or on another tape");
      if (value.shape() != shared.shape() || value.dtype() != shared.dtype())
        fail<ShapeError>(p_.face, "the update of shared variable '", shared.name(), "' at iteration ", t, " is ",
                         value.dtype(), " of shape ", to_string(value.shape()), " but the variable is ",
                         shared.dtype(), " of shape ", to_string(shared.shape()));
    }
    if (r.until.defined() && r.until.numel() != 1)
      fail<ShapeError>(p_.face, "the until condition at iteration ", t, " has shape ", to_string(r.until.shape()),
                       "; it must be a single value");
  }


  // Nodes whose values later iterations or the results still need.
  std::vector<std::uint32_t> live_nodes() const {
    std::vector<std::uint32_t> keep = carried_nodes();
    for (const auto& o : outs_)
      for (const auto& v : o.values) keep.push_back(v.id());
    return keep;
  }

  // The state after the last iteration: what the next one reads, its outputs and updates.
  std::vector<std::uint32_t> carried_nodes() const {
    std::vector<std::uint32_t> keep;
    for (const auto& o : outs_)
      if (o.fed_back) {
        const std::int64_t k_max = max_lag(*o.spec);
        for (std::size_t i = o.history.size() - std::min<std::size_t>(o.history.size(), k_max); i < o.history.size(); ++i)
          keep.push_back(o.history[i].id());
      }
    for (const auto& v : last_)
      if (v.defined()) keep.push_back(v.id());
    for (const auto& [shared, id] : scope_.overrides) keep.push_back(id);
    return keep;
  }

  // The values the last iteration added to stacked outputs: the results keep them.
  std::vector<std::uint32_t> new_results() const {
    std::vector<std::uint32_t> ids;
    for (const auto& o : outs_)
      if (!o.values.empty()) ids.push_back(o.values.back().id());
    return ids;
  }

  // Without gradients nothing needs the iteration's nodes: keep the values that later
  // iterations read, drop the rest, so memory does not grow with the number of steps.
  void compact() {
    struct Carry {
      std::vector<Tensor> history;
      Tensor last;
    };
    std::vector<Carry> carries(outs_.size());
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      OutputPlan& o = outs_[j];
      if (o.fed_back) {
        const std::int64_t k_max = max_lag(*o.spec);
        for (std::size_t i = o.history.size() - k_max; i < o.history.size(); ++i)
          carries[j].history.push_back(o.history[i].value());
      }
      if (o.spec->keep == Keep::all) o.plain.push_back(last_[j].value());
      carries[j].last = last_[j].value();
    }
    std::vector<Tensor> overrides;
    for (const auto& [who, id] : scope_.overrides) overrides.push_back(TapeAccess::node_value(tape_, id));
    std::vector<Tensor> updated;
    for (const auto& [shared, value] : updates_) updated.push_back(value.value());

    TapeAccess::truncate(tape_, base_);
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      OutputPlan& o = outs_[j];
      o.values.clear();
      o.history.clear();
      for (auto& h : carries[j].history) o.history.push_back(tape_.constant(h));
      last_[j] = tape_.constant(carries[j].last);
    }
    for (std::size_t i = 0; i < overrides.size(); ++i) scope_.overrides[i].second = tape_.constant(overrides[i]).id();
    Updates fresh;
    std::size_t i = 0;
    for (const auto& [shared, value] : updates_) fresh.set(shared, tape_.constant(updated[i++]));
    updates_ = fresh;
  }

  ScanRun finish(std::int64_t steps, bool checkpointed) {
    ScanRun run;
    run.steps = steps;
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      OutputPlan& o = outs_[j];
      if (o.spec->keep == Keep::last) {
        run.outputs.push_back(steps > 0 ? last_[j] : (o.fed_back ? o.history.back() : Var()));
        continue;
      }
      run.outputs.push_back(stacked(o, steps, checkpointed));
    }
    run.updates = updates_;
    return run;
  }

  Var stacked(OutputPlan& o, std::int64_t steps, bool checkpointed) {
    const OutputSpec& s = *o.spec;
    if (steps == 0) {
      Shape empty{0};
      if (o.shape) empty.insert(empty.end(), o.shape->begin(), o.shape->end());
      return moved_axis(tape_.constant(zeros(empty, o.dtype)), s.stack_axis);
    }
    if (!o.plain.empty()) {  // a run without gradients
      if (s.reverse_stack) std::reverse(o.plain.begin(), o.plain.end());
      return tape_.constant(stack(std::span<const Tensor>(o.plain), s.stack_axis));
    }
    std::vector<Var> values = o.values;
    if (s.reverse_stack) std::reverse(values.begin(), values.end());
    if (!checkpointed || s.stack_axis != 0) return stack(std::span<const Var>(values), s.stack_axis);
    // stack() written out (unsqueeze each step's value, concat), because each step's value
    // now lives in the stacked result too: point the step's node, and the unsqueezed view
    // of it, at that copy, so the tape does not hold both.
    std::vector<Var> parts;
    parts.reserve(values.size());
    for (const Var& v : values) parts.push_back(unsqueeze(v, 0));
    Var out = concat(std::span<const Var>(parts), 0);
    const Tensor& all = out.value();
    for (std::size_t t = 0; t < values.size(); ++t) {
      const auto row = static_cast<std::int64_t>(t);
      if (values[t].id() >= scope_.begin && values[t].value().defined())
        TapeAccess::share_value(tape_, values[t].id(), all[row]);
      if (parts[t].value().defined()) TapeAccess::share_value(tape_, parts[t].id(), all.rows(row, row + 1));
    }
    return out;
  }

  static Var moved_axis(const Var& v, std::int64_t axis) {
    if (axis == 0) return v;
    const auto rank = v.rank();
    const std::int64_t to = normalize_axis("scan", axis, v.shape(), "output axis");
    Axes perm;
    for (std::int64_t i = 1; i < rank; ++i) perm.push_back(i);
    perm.insert(perm.begin() + to, 0);
    return permute(v, perm);
  }

  const StepFn& step_;
  const ScanProgram& p_;
  Tape& tape_;
  std::vector<SequencePlan> seqs_;
  std::vector<OutputPlan> outs_;
  std::int64_t steps_ = 0;
  bool from_own_end_ = false, reversed_ = false;
  ScanScope scope_;
  std::uint32_t base_ = 0;
  std::vector<Var> args_;
  std::vector<Var> last_;
  Updates updates_;
  std::vector<Shared> implicit_;  // Shared values updated inside the step (random streams)
  std::optional<LengthMask> mask_;  // per-element lengths, when given
};

}  // namespace

ScanRun run(const StepFn& step, const ScanProgram& program) {
  check_options(program);
  Tape& tape = tape_of(program);
  return transactional(tape, [&] {
    Run r(step, program, tape);
    ScanRun out = r();
    r.pass_implicit_updates_out(out);
    return out;
  });
}

void add_carried_outputs(ScanProgram& program, const std::vector<Var>& initial) {
  for (const auto& v : initial) {
    OutputSpec spec;
    spec.initial = v;
    spec.keep = Keep::last;
    program.outputs.push_back(spec);
  }
}

std::pair<std::vector<Var>, std::vector<Var>> split_outputs(const ScanRun& run, std::size_t n) {
  const auto middle = run.outputs.begin() + static_cast<std::ptrdiff_t>(n);
  return {std::vector<Var>(run.outputs.begin(), middle), std::vector<Var>(middle, run.outputs.end())};
}

}  // namespace recur::scan_engine
