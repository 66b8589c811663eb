#pragma once
// The vocabulary of scan: what a step function returns, shared-variable updates, and the
// options common to every face (Theano's, JAX's, ONNX's).
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// New values for shared variables, in the order they were given. Scan never writes them
// into the Shared itself: apply_updates(updates) does, when the caller decides.
class Updates {
 public:
  Updates() = default;
  Updates(std::initializer_list<std::pair<Shared, Var>> items);
  void set(const Shared& shared, const Var& value);  // replaces an earlier value for it
  bool contains(const Shared& shared) const;
  // The new value for `shared`; ValueError naming it when there is none.
  const Var& operator[](const Shared& shared) const;
  std::size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  auto begin() const { return items_.begin(); }
  auto end() const { return items_.end(); }

 private:
  std::vector<std::pair<Shared, Var>> items_;
};

// Assigns every new value to its shared variable (Shared::assign: shape and dtype checked
// for all before any is written).
void apply_updates(const Updates& updates);

// What a step function returns: its outputs (in the order of outputs_info), updates of
// shared variables, and optionally a stopping condition (Theano's `until`): scan stops
// after the iteration in which `until` is nonzero.
struct StepResult {
  std::vector<Var> outputs;
  Updates updates;
  Var until;

  StepResult() = default;
  StepResult(Var output) : outputs{std::move(output)} {}                       // NOLINT
  StepResult(std::vector<Var> outs) : outputs(std::move(outs)) {}             // NOLINT
  StepResult(std::initializer_list<Var> outs) : outputs(outs) {}              // NOLINT
  StepResult(Updates u) : updates(std::move(u)) {}                            // NOLINT
  StepResult(std::vector<Var> outs, Updates u, Var stop = Var())
      : outputs(std::move(outs)), updates(std::move(u)), until(std::move(stop)) {}
};

// Theano's until(condition), for StepResult{outputs, {}, until(c)}.
inline Var until(Var condition) { return condition; }

using StepFn = std::function<StepResult(std::span<const Var>)>;

// Recomputation instead of keeping every step's values for backward:
//   every_k(k)    keep every k-th carry, recompute the steps in between (each once);
//   auto_sqrt()   every_k with k close to sqrt(number of steps);
//   snapshots(s)  binomial checkpointing (Griewank and Walther's revolve): at most s carries
//                 held (the initial one included) and one step's values, with the fewest
//                 recomputed steps, r*T - C(s+r, s+1) for T steps (r the smallest integer
//                 with C(s+r, s) >= T); s >= 1;
//   budget(bytes) snapshots(s) with s chosen after the first step: one step's values and
//                 saved tensors, plus s - 1 carries, fit in `bytes` (s >= 1 however small).
struct Checkpoint {
  std::int64_t every = 0;  // 0: keep everything
  bool automatic = false;
  bool revolve = false;             // binomial checkpointing, with one of:
  std::int64_t snapshot_count = 0;  //   this many snapshots (>= 1), or
  std::size_t budget_bytes = 0;     //   (when snapshot_count is 0) s from this budget (> 0)
  static Checkpoint none() { return {}; }
  static Checkpoint every_k(std::int64_t k) { return {k, false}; }
  static Checkpoint auto_sqrt() { return {0, true}; }
  static Checkpoint snapshots(std::int64_t s) { return {0, false, true, s, 0}; }
  static Checkpoint budget(std::size_t bytes) { return {0, false, true, 0, bytes}; }
  bool recomputes() const { return every != 0 || automatic || revolve; }
};

// Per-batch-element numbers of steps (the `lengths` option of the Theano and JAX faces).
// Element b runs the steps at positions 0 .. lengths[b] - 1 of the loop; from there on its
// carry stays as it was and its outputs are zero. Under reverse (go_backwards, JAX's
// reverse) it runs positions lengths[b] - 1 down to 0, as ONNX's sequence_lens and
// PyTorch's packed sequences do. The batch axis is axis 0 of every carry and step output,
// and the axis after time of every sequence. Given as a std::vector<int64> or a 1-D tensor
// of whole numbers (any dtype); scan checks size and range when it runs.
struct SequenceLengths {
  std::vector<std::int64_t> values{};
  Tensor tensor{};  // used instead of values when defined
  bool given = false;

  SequenceLengths() = default;
  SequenceLengths(std::vector<std::int64_t> v) : values(std::move(v)), given(true) {}   // NOLINT
  SequenceLengths(std::initializer_list<std::int64_t> v) : values(v), given(true) {}   // NOLINT
  SequenceLengths(Tensor t) : tensor(std::move(t)), given(true) {}                     // NOLINT
};

// Which values of an output scan returns.
enum class Keep { all, last };

// Whether scan captures its step (docs/scan.md, "Captured steps"): records the step
// function's first two calls, and when they record the same program, records the other
// steps from it without calling the function.
//   automatic  capture where it is safe and pays, else record every call (the default; a
//              loop of few steps of small values records faster than it captures, decided
//              from its first call: docs/scan.md, "Captured steps");
//   off        record every call of the step function;
//   required   capture where it is safe, whatever the loop's size; a step that could be
//              the same at every step and is not captured (an op that cannot be copied or
//              described, a loop inside the step) is a ValueError naming the reason.
// The process default is automatic; the environment variable RECUR_SCAN_CAPTURE (off,
// automatic or required), read once, changes it (the test suite runs its scan tests with
// each).
enum class Capture { automatic, off, required };
Capture default_capture();

// Which path a scan took: captured, or recorded step by step and why.
struct StepCapture {
  bool captured = false;
  std::string reason;  // empty when captured
  // What the captured step's rewrite did (docs/scan.md, "Captured steps"): products merged
  // into one, ops run once before the loop, ops run over every step at once, and products
  // whose weight gradient is taken over many steps' rows, and chains of elementwise ops
  // fused into one op each.
  int merged_products = 0, hoisted_ops = 0, pushed_out_ops = 0, batched_weight_grads = 0, fused_chains = 0;
};

}  // namespace recur
