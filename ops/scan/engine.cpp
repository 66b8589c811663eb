#include <recur/ops/scan/engine.hpp>

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <memory>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/scan/captured_loop_detail.hpp>
#include <recur/ops/scan/engine_plan_detail.hpp>
#include <recur/ops/scan/lengths_mask_detail.hpp>
#include <recur/ops/scan/memory_policy_detail.hpp>
#include <recur/ops/scan/planned_loop_detail.hpp>
#include <recur/ops/scan/scan_scope_detail.hpp>
#include <recur/ops/scan/step_program_detail.hpp>
#include <recur/ops/scan/step_rewrite_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::scan_engine {
namespace {

using detail::max_lag;
using detail::output_name;
using detail::OutputPlan;
using detail::sequence_name;
using detail::SequencePlan;

// Runs of the engine started on this thread: a step that starts one runs a loop of its own
// (counted whether or not it records gradients, so with or without a region on the tape).
thread_local std::uint64_t loops_started = 0;

// Pops the scan's scope from the tape however the run ends.
struct ScopeGuard {
  Tape& tape;
  ~ScopeGuard() { TapeAccess::pop_scope(tape); }
};

class Run final : private detail::LoopState {
 public:
  Run(const StepFn& step, const ScanProgram& p, Tape& tape)
      : step_(step), p_(p), tape_(tape), seqs_(detail::plan_sequences(p)), outs_(detail::plan_outputs(p)) {
    steps_ = detail::count_steps(p, seqs_);
    from_own_end_ = p.backwards;
    reversed_ = p.n_steps && *p.n_steps < 0;
    for (std::size_t i = 0; i < p.non_sequences.size(); ++i)
      if (!p.non_sequences[i].defined()) fail<ValueError>(p.face, "non_sequence ", i, " is an undefined Var");
    if (p.batch_lengths.given) plan_lengths();
  }

  ScanRun operator()() {
    ++loops_started;
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
    std::vector<std::uint32_t> iteration_begin;
    std::unique_ptr<detail::MemoryPolicy> policy = detail::choose_policy(tape_, base_, p_.checkpoint, steps_, recording);
    const Trial trial = try_capture(policy, iteration_begin);
    if (trial.capture.captured)  // the trial's iterations are gone: a new policy from the new base
      policy = detail::choose_policy(tape_, base_, p_.checkpoint, steps_, recording);
    drop_unread_ = trial.capture.captured && recording && policy->full_tape();
    if (std::optional<ScanRun> run = run_as_one_node(*policy, trial.capture)) return std::move(*run);
    std::int64_t t = trial.kept;
    for (; !trial.stopped && t < steps_; ++t) {
      iteration_begin.push_back(tape_.size());
      const bool stop = replay_ ? replay(t) : iterate(t);
      policy->iteration_recorded(*this, t, stop || t + 1 == steps_);
      if (stop) {
        ++t;
        break;
      }
    }
    policy->loop_ended(*this, t);
    if (drop_unread_) {
      replay_->drop_unread_before(before_steps_, base_);
      replay_->drop_unread_block();
    }
    if (recording && p_.truncate_gradient >= 0 && t > p_.truncate_gradient) {
      // Drop iterations [0, t - k): gradients stop where the last k iterations begin. With
      // lengths each element's own last k steps may begin earlier (the mask gates the rest).
      std::int64_t cut_end = t - p_.truncate_gradient;
      if (mask_) cut_end = std::min(cut_end, mask_->first_needed_iteration(tap_window()));
      const auto kept_from = static_cast<std::size_t>(cut_end);
      TapeAccess::cut_gradients(tape_, iteration_begin.front(),
                                kept_from < iteration_begin.size() ? iteration_begin[kept_from] : tape_.size());
    }
    ScanRun run = finish(t, policy->releases());
    run.capture = trial.capture;
    if (recording)
      note_region(t, *policy, trial.capture.captured ? "captured" : "recorded: " + trial.capture.reason);
    return run;
  }

  // What Tape::memory_report() says about this run: its nodes, steps, policy and path.
  void note_region(std::int64_t steps, const detail::MemoryPolicy& policy, std::string step) {
    TapeAccess::note_region(tape_, {.info = {.name = std::string(p_.face),
                                             .steps = steps,
                                             .policy = policy.text(),
                                             .step = std::move(step)},
                                    .begin = scope_.begin, .end = tape_.size()});
  }

  // A captured loop on a full tape recorded as one node (captured_loop_detail.hpp) where
  // it can be: gradients recorded, no lengths, no truncation, its pushed-out work in one
  // block, every fed-back output read at tap -1 only, and stacked outputs on axis 0 in
  // step order. Else nullopt, and the loop replays the program step by step.
  std::optional<ScanRun> run_as_one_node(const detail::MemoryPolicy& policy, const StepCapture& capture) {
    if (!replay_ || !grad_enabled() || !policy.full_tape() || mask_ || p_.truncate_gradient >= 0 ||
        pushed_.steps > 0 || !detail::loop_node_switch())
      return std::nullopt;
    // The outputs the step returns beyond outputs_info (JAX's ys), as the first step's check adds them.
    if (p_.infer_extra_outputs) add_extra_outputs(program_->outputs.size());
    if (outs_.size() != program_->outputs.size()) return std::nullopt;
    detail::LoopSpec spec;
    spec.steps = steps_;
    std::size_t arg = 0;
    for (const auto& s : seqs_)
      for (std::size_t k = 0; k < s.spec->taps.size(); ++k, ++arg) {
        if (args_read_[arg]) return std::nullopt;  // the step still reads the element
        spec.args.push_back({});
      }
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      const OutputPlan& o = outs_[j];
      if (o.spec->keep == Keep::all && (o.spec->stack_axis != 0 || o.spec->reverse_stack)) return std::nullopt;
      spec.outputs.push_back({program_->outputs[j], o.spec->keep == Keep::all});
      if (!o.fed_back) continue;
      if (o.spec->taps != std::vector<std::int64_t>{-1} || o.spec->initial_has_tap_axis) return std::nullopt;
      spec.args.push_back({detail::LoopArg::Kind::carried, static_cast<std::uint32_t>(spec.carries.size()), {}});
      spec.carries.push_back({program_->outputs[j], o.history.back()});
      ++arg;
    }
    for (const Var& v : p_.non_sequences) spec.args.push_back({detail::LoopArg::Kind::invariant, 0, v});
    const std::uint64_t planned_before = detail::planned_loop_runs();
    std::optional<std::vector<Var>> outputs = detail::record_loop(tape_, *program_, spec);
    if (!outputs) return std::nullopt;
    const bool planned = detail::planned_loop_runs() != planned_before;  // its forward ran planned
    ScanRun run;
    run.outputs = std::move(*outputs);
    run.steps = steps_;
    run.updates = updates_;
    run.capture = capture;
    replay_->drop_unread_before(before_steps_, base_);  // the input products' buffers, as the steps' replay does
    note_region(steps_, policy, planned ? "captured, one node, planned" : "captured, one node");
    return run;
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

  // The step's arguments at iteration t, in args_: sequence taps, then push_state_args().
  // `read` (a captured step's): sequence elements it does not read are left undefined, not
  // recorded (their uses were pushed out of the loop).
  void collect_args(std::int64_t t, const std::vector<std::uint8_t>* read = nullptr) {
    args_.clear();
    for (const auto& s : seqs_) {
      const std::int64_t pos = position(s, t);
      for (auto k : s.spec->taps)
        args_.push_back(read && !(*read)[args_.size()] ? Var() : index(s.spec->data, s.axis, s.first + pos + k));
    }
    push_state_args();
  }

  // One iteration; true when its `until` condition holds.
  bool iterate(std::int64_t t) {
    collect_args(t);
    StepResult r = step_(std::span<const Var>(args_.data(), args_.size()));
    return take_result(t, r);
  }

  // One iteration recorded from the captured program (no `until`: such a step is not captured).
  bool replay(std::int64_t t) {
    collect_args(t, &args_read_);
    if (pushed_.steps > 0 && t > 0 && t % pushed_.steps == 0) {  // a new block's pushed-out work first
      if (drop_unread_) replay_->drop_unread_block();
      replay_->begin_block(t, std::min(t + pushed_.steps, steps_), rewrite_cx_->args);
    }
    StepResult r = replay_->run(std::span<const Var>(args_.data(), args_.size()), t, scope_);
    if (drop_unread_) replay_->drop_unread();
    return take_result(t, r);
  }

  // What iteration t's step returned, taken into the loop's state.
  bool take_result(std::int64_t t, const StepResult& r) {
    // A replayed step runs step 0's program on values of step 0's shapes (its carried
    // values are outputs checked to keep their initial states' shapes): checked once.
    if (!replay_ || t == 0) check_result(r, t);
    if (replay_ && drop_unread_ && !mask_) stack_in_place(t, r);
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

  // A captured full tape keeps each step's stacked outputs once: step t's value is copied
  // into its row of the stacked result at once and its node points there, so the step's own
  // buffer serves the next step, and stacked() joins the rows without copying them. (Done at
  // the end, every step's buffer would be free only after the copy, and stay in the pool.)
  void stack_in_place(std::int64_t t, const StepResult& r) {
    if (stacks_.empty()) stacks_.resize(outs_.size());
    for (std::size_t j = 0; j < outs_.size(); ++j) {
      const OutputSpec& s = *outs_[j].spec;
      const Var& v = r.outputs[j];
      if (s.keep != Keep::all || s.stack_axis != 0 || v.id() < scope_.begin) continue;
      const Tensor& value = TapeAccess::node_value(tape_, v.id());
      if (!value.defined()) continue;  // a dropped value (no output is): left where it is
      // Already in a stacked result: one value returned as several outputs (their results
      // share that buffer), or a state returned unchanged (stacked() copies then).
      if (std::any_of(stacks_.begin(), stacks_.end(), [&](const Tensor& a) { return a.storage() == value.storage(); }))
        continue;
      Tensor& all = stacks_[j];
      if (!all.defined()) {
        Shape shape{steps_};
        shape.insert(shape.end(), value.shape().begin(), value.shape().end());
        all = Tensor::empty(shape, value.dtype());
      }
      const Shape& each = all.shape();  // [steps, the value's shape...]
      const Shape& own = value.shape();
      if (value.dtype() != all.dtype() || !std::equal(own.begin(), own.end(), each.begin() + 1, each.end()))
        continue;  // check_result's to say
      Tensor row = all[s.reverse_stack ? steps_ - 1 - t : t];
      std::copy_n(static_cast<const char*>(value.raw_data()), value.nbytes(), static_cast<char*>(row.raw_data()));
      TapeAccess::share_value(tape_, v.id(), row);
    }
  }

  // ---- capturing the step (step_program_detail.hpp) ------------------------------------
  struct Trial {
    std::int64_t kept = 0;  // iterations it recorded that stay on the tape
    bool stopped = false;   // the last of them stopped the loop (until)
    StepCapture capture;
  };
  // What the trial changes and puts back when it drops its iterations.
  struct LoopSnapshot {
    std::vector<OutputPlan> outs;
    std::vector<Var> last;
    Updates updates;
    std::vector<Shared> implicit;
    std::vector<std::pair<const void*, std::uint32_t>> overrides;
  };
  LoopSnapshot snapshot() const { return {outs_, last_, updates_, implicit_, scope_.overrides}; }
  void restore(LoopSnapshot s) {
    outs_ = std::move(s.outs);
    last_ = std::move(s.last);
    updates_ = std::move(s.updates);
    implicit_ = std::move(s.implicit);
    scope_.overrides = std::move(s.overrides);
    scope_.implicit_updates.clear();
  }

  // Capturing costs a second call recorded with every op kept, reading both calls, the trial's
  // two steps again (the loop replays them) and work per op and per weight to rewrite, fuse
  // and plan the step (a weight laid out for its products, its gradient summed apart); each
  // step after that saves the tape's work per op and, on larger values, what the rewrites
  // gain. So where capture is automatic, the step's first call decides, before anything is
  // read, from steps and the largest value it made: capture where steps x largest comes to
  // kCaptureElements and there are kCaptureSteps steps, or fewer steps of values of
  // kLargeValue elements or more. Measured with an LSTM cell (recur_scan_cell_steps
  // --length --batch --hidden, captured against recorded): capture paid from about 12 steps
  // at B1 H32 (values of 128 elements), 5 at B4 H32, 6 at B8 H128 and B32 H64, 3 at B1 H256
  // and at B32 H256 (32768 elements). The thresholds err towards recording: 12 to 15 steps
  // at B1 H32, 5 at B4 H32 and 3 to 5 at B1 H256 are recorded, where capture was even or a
  // few percent faster.
  static constexpr std::int64_t kCaptureElements = 2048, kCaptureSteps = 6, kLargeValue = 16384;
  // `begin`: the first node the step's first call recorded.
  std::optional<std::string> too_small_to_capture(std::uint32_t begin) const {
    std::int64_t largest = 0;
    for (std::uint32_t id = begin; id < tape_.size(); ++id)
      if (const Tensor& v = TapeAccess::node(tape_, id).value; v.defined()) largest = std::max(largest, v.numel());
    const bool pays = steps_ * largest >= kCaptureElements && (steps_ >= kCaptureSteps || largest >= kLargeValue);
    if (pays) return std::nullopt;
    return "the loop is too small for capture to pay (" + std::to_string(steps_) + " steps of values of at most " +
           std::to_string(largest) + " elements)";
  }

  // Records the first two iterations with every op kept, as the loop would (`policy` told of
  // each), and reads each into a program. The same program twice: the iterations and the
  // policy are dropped and the loop replays the program from iteration 0. Otherwise the
  // iterations stay, and the loop goes on calling the step function.
  Trial try_capture(std::unique_ptr<detail::MemoryPolicy>& policy, std::vector<std::uint32_t>& iteration_begin) {
    const Capture mode = p_.capture.value_or(default_capture());
    if (mode == Capture::off) return {0, false, {false, "capture is off"}};
    if (steps_ < 3) return {0, false, {false, "fewer than 3 steps"}};
    LoopSnapshot before = snapshot();
    const std::uint32_t mark = tape_.size();
    const std::uint64_t loops = loops_started;
    std::optional<detail::StepProgram> programs[2];
    std::optional<detail::Refusal> refusal;
    std::vector<std::pair<Shared, Var>> previous_updates;
    Trial trial;
    {
      struct KeepOps {
        Tape& tape;
        bool was = TapeAccess::keeps_all_ops(tape);
        ~KeepOps() { TapeAccess::keep_all_ops(tape, was); }
      } keep{tape_};
      TapeAccess::keep_all_ops(tape_, true);
      for (std::int64_t t = 0; t < 2 && !refusal && !trial.stopped; ++t) {
        iteration_begin.push_back(tape_.size());
        collect_args(t);
        const std::uint32_t begin = tape_.size();
        const std::uint64_t reads = recur::detail::item_reads;
        const StepResult r = step_(std::span<const Var>(args_.data(), args_.size()));
        check_result(r, t);
        if (r.until.defined())
          refusal = {true, "the step returns an until condition"};
        else if (recur::detail::item_reads != reads)
          refusal = {true, "the step reads a value on the host (item() or at())"};
        else if (loops_started != loops)
          refusal = {true, "the step runs a loop of its own (that loop captures its own step)"};
        else if (auto small = t == 0 && mode == Capture::automatic ? too_small_to_capture(begin) : std::nullopt)
          refusal = {true, std::move(*small)};  // before the program is read: the loop goes on recording
        else {
          auto [program, why] = detail::read_program(
              tape_, {.loop_begin = mark, .begin = begin, .end = tape_.size(), .args = args_, .result = &r,
                      .implicit_updates = scope_.implicit_updates, .previous_updates = previous_updates});
          if (program) programs[t] = std::move(program);
          else refusal = std::move(why);
        }
        trial.stopped = take_result(t, r);
        previous_updates.assign(updates_.begin(), updates_.end());
        policy->iteration_recorded(*this, t, trial.stopped || t + 1 == steps_);
        ++trial.kept;
      }
    }
    if (!refusal)
      if (auto diff = detail::difference(*programs[0], *programs[1])) refusal = {true, std::move(*diff)};
    if (refusal && mode == Capture::required && !refusal->inherent)
      fail<ValueError>(p_.face, "the step cannot be captured (Capture::required): ", refusal->reason);
    if (refusal) {
      trial.capture = {false, refusal->reason};
      return trial;
    }
    // On a full tape the pushed-out work goes a block of steps at a time (PushedBlocks).
    const bool blocks = policy->full_tape() && grad_enabled() && p_.truncate_gradient < 0;
    policy.reset();
    restore(std::move(before));
    TapeAccess::truncate(tape_, mark);
    iteration_begin.clear();
    detail::RewriteCounts counts;
    rewrite_cx_ = rewrite_context();
    if (blocks) rewrite_cx_->block_steps = pushed_block_steps();
    program_ = detail::rewrite(tape_, *programs[1], *rewrite_cx_, &counts, &pushed_);
    before_steps_ = mark;
    replay_.emplace(tape_, *program_, pushed_);
    args_read_ = detail::arguments_read(*program_, rewrite_cx_->args.size());
    base_ = tape_.size();  // what the steps share stays before the loop's steps
    return {0, false,
            {true, "", counts.merged, counts.hoisted, counts.pushed_out, counts.batched_weight_grads,
             counts.fused_chains}};
  }

  // Steps per block of pushed-out work: about RewriteSwitches::pushed_rows rows of the first
  // sequence (its element's first size, the batch), so that a block's products stay large.
  std::int64_t pushed_block_steps() const {
    std::int64_t rows = 1;
    if (!seqs_.empty()) {
      Shape element = seqs_.front().spec->data.shape();
      element.erase(element.begin() + seqs_.front().axis);
      if (element.size() >= 2) rows = std::max<std::int64_t>(1, element[0]);
    }
    return std::max<std::int64_t>(1, detail::rewrite_switches().pushed_rows / rows);
  }

  // What each of the step's arguments is, in collect_args' order.
  detail::RewriteContext rewrite_context() {
    detail::RewriteContext cx{{}, steps_, grad_enabled(), !p_.checkpoint.recomputes()};
    for (const auto& s : seqs_) {
      const std::int64_t start = position(s, 0);
      const bool in_order = position(s, 1) == start + 1;  // the loop reads it forwards, one by one
      Shape element = s.spec->data.shape();
      element.erase(element.begin() + s.axis);
      for (auto k : s.spec->taps) {
        detail::ArgRole role{detail::ArgRole::Kind::sequence, element, {}};
        if (in_order)
          role.every_step = [&s, from = s.first + start + k](std::int64_t begin, std::int64_t end) {
            const Var rows = slice(s.spec->data, s.axis, from + begin, from + end);
            return s.axis == 0 ? rows : moved_to_front(rows, s.axis);
          };
        cx.args.push_back(std::move(role));
      }
    }
    for (const auto& o : outs_)
      if (o.fed_back)
        for (std::size_t k = 0; k < o.spec->taps.size(); ++k)
          cx.args.push_back({detail::ArgRole::Kind::carried, o.history.back().shape(), {}});
    for (const Var& v : p_.non_sequences) cx.args.push_back({detail::ArgRole::Kind::invariant, v.shape(), {}});
    return cx;
  }

  // Axis `axis` of v moved to the front.
  static Var moved_to_front(const Var& v, std::int64_t axis) {
    Axes perm{axis};
    for (std::int64_t i = 0; i < v.rank(); ++i)
      if (i != axis) perm.push_back(i);
    return permute(v, perm);
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

  // Outputs beyond outputs_info up to n (inferred from what the step returns: JAX's ys).
  void add_extra_outputs(std::size_t n) {
    while (outs_.size() < n) {
      const std::size_t i = outs_.size() - p_.outputs.size();
      const OutputSpec* spec = i < p_.extra_output_specs.size() ? &p_.extra_output_specs[i] : &p_.extra_outputs;
      outs_.push_back({spec, false, {}, {}, DType::float32, {}, {}});
    }
  }

  void check_result(const StepResult& r, std::int64_t t) {
    if (t == 0 && p_.infer_extra_outputs) add_extra_outputs(r.outputs.size());
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


  // ---- what the memory policy asks (memory_policy_detail.hpp) ----------------------------
  std::vector<std::uint32_t> live_nodes() const override {
    std::vector<std::uint32_t> keep = carried_nodes();
    for (const auto& o : outs_)
      for (const auto& v : o.values) keep.push_back(v.id());
    return keep;
  }

  std::vector<std::uint32_t> carried_nodes() const override {
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

  std::vector<std::uint32_t> new_results() const override {
    std::vector<std::uint32_t> ids;
    for (const auto& o : outs_)
      if (!o.values.empty()) ids.push_back(o.values.back().id());
    return ids;
  }

  // Without gradients nothing needs the iteration's nodes: keep the values that later
  // iterations read, drop the rest, so memory does not grow with the number of steps.
  void compact() override {
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
    Var out = stack(std::span<const Var>(values), s.stack_axis);
    // A checkpointed loop keeps each step's output for its replays, and a captured one for
    // backward: point each step's node at its row of the stacked copy, so that the tape does
    // not hold both. (A captured full tape wrote the rows as it went: stack viewed them.)
    if (!(checkpointed || replay_) || s.stack_axis != 0) return out;
    const Tensor& all = out.value();
    for (std::size_t t = 0; t < values.size(); ++t)
      if (values[t].id() >= scope_.begin && TapeAccess::node_value(tape_, values[t].id()).defined())
        TapeAccess::share_value(tape_, values[t].id(), all[static_cast<std::int64_t>(t)]);
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
  std::vector<Tensor> stacks_;      // per output, its stacked result filled step by step (stack_in_place)
  std::optional<detail::StepProgram> program_;  // the captured step, when it was captured
  std::optional<detail::StepReplay> replay_;
  std::vector<std::uint8_t> args_read_;  // per argument, whether the captured step reads it
  std::optional<detail::RewriteContext> rewrite_cx_;  // the captured step's (its sequences' blocks)
  detail::PushedBlocks pushed_;
  // A captured loop on a full tape drops the buffers no backward rule reads (StepReplay::
  // drop_unread); the values its rewrite made before the steps begin at before_steps_.
  bool drop_unread_ = false;
  std::uint32_t before_steps_ = 0;
};

}  // namespace

ScanRun run(const StepFn& step, const ScanProgram& program) {
  detail::check_options(program);
  Tape& tape = detail::tape_of(program);
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

namespace recur {

Capture default_capture() {
  static const Capture chosen = [] {
    const char* v = std::getenv("RECUR_SCAN_CAPTURE");
    const std::string_view s = v ? v : "";
    if (s == "off") return Capture::off;
    if (s == "required") return Capture::required;
    return Capture::automatic;
  }();
  return chosen;
}

}  // namespace recur
