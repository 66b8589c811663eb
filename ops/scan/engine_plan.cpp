// A ScanProgram checked and planned before its loop runs (engine_plan_detail.hpp).
#include <recur/ops/scan/engine_plan_detail.hpp>

#include <algorithm>
#include <limits>

#include <recur/core/error.hpp>

namespace recur::scan_engine::detail {
namespace {

// Taps lie within +-2^62, so that the offsets computed from them (their negation, the sum
// of the furthest back and the furthest ahead) stay inside int64.
constexpr std::int64_t kMaxTap = std::int64_t{1} << 62;

std::string taps_to_string(const std::vector<std::int64_t>& taps) {
  Shape s(taps.begin(), taps.end());
  return to_string(s);
}

}  // namespace

std::string output_name(const ScanProgram& p, std::size_t j) {
  return p.output_name ? p.output_name(j) : "output " + std::to_string(j);
}
std::string sequence_name(const ScanProgram& p, std::size_t i) {
  return p.sequence_name ? p.sequence_name(i) : "sequence " + std::to_string(i);
}

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

std::int64_t max_lag(const OutputSpec& o) { return -*std::min_element(o.taps.begin(), o.taps.end()); }



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

namespace {

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

}  // namespace

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

}  // namespace recur::scan_engine::detail
