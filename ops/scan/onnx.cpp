// ONNX's face on the engine: scan inputs are sequences with their own axis and direction,
// states are fed-back outputs of which only the last value is kept, scan outputs are
// inferred outputs with their own stacking axis and direction (prepend = reverse_stack).
#include <recur/ops/scan/onnx.hpp>

#include <algorithm>
#include <limits>
#include <optional>
#include <string>
#include <tuple>

#include <recur/core/creation.hpp>
#include <recur/ops/scan/engine.hpp>
#include <recur/ops/scan/onnx_detail.hpp>

namespace recur {
namespace {

// An attribute list is either empty (defaults) or has one entry per input (or output).
void check_count(std::string_view face, std::string_view attribute, std::size_t size, std::size_t expected,
                 std::string_view what) {
  if (size != 0 && size != expected)
    fail<ValueError>(face, attribute, " has ", size, " entries for ", expected, " ", what);
}

void check_directions(std::string_view face, std::string_view attribute,
                      const std::vector<std::int64_t>& directions) {
  for (std::size_t i = 0; i < directions.size(); ++i)
    if (directions[i] != 0 && directions[i] != 1)
      fail<ValueError>(face, attribute, "[", i, "] = ", directions[i], "; a direction is 0 or 1");
}

std::int64_t entry(const std::vector<std::int64_t>& attribute, std::size_t i) {
  return i < attribute.size() ? attribute[i] : 0;
}

// The scan axes of the inputs, normalized. (Their lengths along them: the engine checks.)
std::vector<std::int64_t> input_axes(std::string_view face, const std::vector<Var>& inputs,
                                     const OnnxScanOptions& o) {
  std::vector<std::int64_t> axes;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "scan_inputs[" + std::to_string(i) + "]";
    if (!inputs[i].defined()) fail<ValueError>(face, name, " is an undefined Var");
    axes.push_back(normalize_axis(face, entry(o.scan_input_axes, i), inputs[i].shape(),
                                  "scan_input_axes[" + std::to_string(i) + "] of " + name));
  }
  return axes;
}

// How many scan outputs a body returns after its `leading` values: fixed by its first call
// (true is returned then, for the caller's checks of the count), the same at every later one.
bool count_scan_outputs(std::string_view face, std::optional<std::size_t>& count, std::size_t returned,
                        std::size_t leading, std::string_view leading_values) {
  if (returned < leading)
    fail<ValueError>(face, "the body returned ", returned, " values; it must return ", leading_values, " first");
  if (!count) {
    count = returned - leading;
    return true;
  }
  if (returned - leading != *count)
    fail<ValueError>(face, "the body returned ", returned - leading, " scan outputs; its first call returned ", *count);
  return false;
}

// States j < n and scan outputs, as messages name them.
std::function<std::string(std::size_t)> state_or_scan_output(std::size_t n) {
  return [n](std::size_t j) { return j < n ? "state " + std::to_string(j) : "scan output " + std::to_string(j - n); };
}

void check_states(std::string_view face, const std::vector<Var>& initial_states) {
  for (std::size_t i = 0; i < initial_states.size(); ++i)
    if (!initial_states[i].defined()) fail<ValueError>(face, "initial_states[", i, "] is an undefined Var");
}

// onnx_scan as the entry point `face`; scan output k kept as keep[k] (past its end: all).
OnnxScanResult run_scan(std::string_view face, const OnnxBody& body, const std::vector<Var>& initial_states,
                        const std::vector<Var>& scan_inputs, const OnnxScanOptions& o, std::span<const Keep> keep = {}) {
  const std::size_t n = initial_states.size(), m = scan_inputs.size();
  if (m == 0) fail<ValueError>(face, "no scan inputs; their length is the number of iterations");
  check_count(face, "scan_input_axes", o.scan_input_axes.size(), m, "scan inputs");
  check_count(face, "scan_input_directions", o.scan_input_directions.size(), m, "scan inputs");
  check_directions(face, "scan_input_directions", o.scan_input_directions);
  check_directions(face, "scan_output_directions", o.scan_output_directions);
  check_states(face, initial_states);
  const std::vector<std::int64_t> axes = input_axes(face, scan_inputs, o);

  scan_engine::ScanProgram p;
  p.face = face;
  p.lengths = scan_engine::Lengths::equal;
  p.sequences_name = "scan inputs";
  p.sequence_name = [](std::size_t i) { return "scan_inputs[" + std::to_string(i) + "]"; };
  for (std::size_t i = 0; i < m; ++i)
    p.sequences.push_back({scan_inputs[i], {0}, axes[i], entry(o.scan_input_directions, i) == 1});
  scan_engine::add_carried_outputs(p, initial_states);
  p.truncate_gradient = o.truncate_gradient;
  p.checkpoint = o.checkpoint;
  p.capture = o.capture;
  p.infer_extra_outputs = true;
  const std::size_t given = std::max({o.scan_output_axes.size(), o.scan_output_directions.size(), keep.size()});
  for (std::size_t k = 0; k < given; ++k) {
    scan_engine::OutputSpec spec;
    spec.stack_axis = entry(o.scan_output_axes, k);
    spec.reverse_stack = entry(o.scan_output_directions, k) == 1;
    if (k < keep.size()) spec.keep = keep[k];
    p.extra_output_specs.push_back(spec);
  }
  p.output_name = state_or_scan_output(n);

  std::optional<std::size_t> k_outputs;
  auto step = [&](std::span<const Var> args) {
    // The engine passes the scan input elements first, the body wants the states first.
    std::vector<Var> body_args(args.begin() + static_cast<std::ptrdiff_t>(m), args.end());
    body_args.insert(body_args.end(), args.begin(), args.begin() + static_cast<std::ptrdiff_t>(m));
    std::vector<Var> out = body(std::span<const Var>(body_args));
    if (count_scan_outputs(face, k_outputs, out.size(), n, "the " + std::to_string(n) + " states")) {
      check_count(face, "scan_output_axes", o.scan_output_axes.size(), *k_outputs, "scan outputs");
      check_count(face, "scan_output_directions", o.scan_output_directions.size(), *k_outputs, "scan outputs");
    }
    return StepResult(std::move(out));
  };
  OnnxScanResult r;
  std::tie(r.final_states, r.scan_outputs) = scan_engine::split_outputs(scan_engine::run(step, p), n);
  return r;
}

// Loop's arguments before the states: the iteration number and the condition, int64 0-d.
Var int64_scalar(std::int64_t v) { return Var(full({}, static_cast<double>(v), DType::int64)); }

OnnxLoopResult run_loop(std::string_view face, const OnnxBody& body, const std::vector<Var>& initial_states,
                        const OnnxLoopOptions& o, std::span<const Keep> keep = {}) {
  if (o.max_trip_count && *o.max_trip_count < 0)
    fail<ValueError>(face, "max_trip_count = ", *o.max_trip_count, " is negative");
  if (!o.max_trip_count && (o.checkpoint.automatic || o.checkpoint.revolve))
    fail<ValueError>(face, "Checkpoint::auto_sqrt, snapshots and budget plan for the number of iterations: they need ",
                     "max_trip_count (Checkpoint::every_k does not)");
  check_states(face, initial_states);
  const std::size_t n = initial_states.size();

  scan_engine::ScanProgram p;
  p.face = face;
  p.lengths = scan_engine::Lengths::equal;
  p.n_steps = o.cond ? o.max_trip_count.value_or(std::numeric_limits<std::int64_t>::max()) : 0;
  p.n_steps_name = "max_trip_count";
  scan_engine::add_carried_outputs(p, initial_states);
  p.truncate_gradient = o.truncate_gradient;
  p.checkpoint = o.checkpoint;
  p.capture = o.capture;
  p.infer_extra_outputs = true;
  for (const Keep k : keep) {
    scan_engine::OutputSpec spec;
    spec.keep = k;
    p.extra_output_specs.push_back(spec);
  }
  p.output_name = state_or_scan_output(n);

  std::int64_t iteration = 0;
  std::optional<std::size_t> k_outputs;
  auto step = [&](std::span<const Var> states) {
    std::vector<Var> body_args{int64_scalar(iteration++), int64_scalar(1)};
    body_args.insert(body_args.end(), states.begin(), states.end());
    std::vector<Var> out = body(std::span<const Var>(body_args));
    count_scan_outputs(face, k_outputs, out.size(), n + 1, "the condition and the " + std::to_string(n) + " states");
    const Var& cond = out[0];
    if (!cond.defined() || cond.numel() != 1)
      fail<ShapeError>(face, "the condition the body returned at iteration ", iteration - 1, " has shape ",
                       cond.defined() ? to_string(cond.shape()) : "(undefined)", "; it must be a single value");
    const bool stop = cond.value().item<double>() == 0;
    return StepResult(std::vector<Var>(out.begin() + 1, out.end()), {}, int64_scalar(stop ? 1 : 0));
  };
  OnnxLoopResult r;
  const scan_engine::ScanRun run = scan_engine::run(step, p);
  std::tie(r.final_states, r.scan_outputs) = scan_engine::split_outputs(run, n);
  r.iterations = run.steps;
  return r;
}

}  // namespace

OnnxLoopResult onnx_loop(const OnnxBody& body, const std::vector<Var>& initial_states, const OnnxLoopOptions& options) {
  return run_loop("onnx_loop", body, initial_states, options);
}

OnnxScanResult onnx_scan(const OnnxBody& body, const std::vector<Var>& initial_states,
                         const std::vector<Var>& scan_inputs, const OnnxScanOptions& options) {
  return run_scan("onnx_scan", body, initial_states, scan_inputs, options);
}

namespace detail {
OnnxScanResult onnx_scan_keeping(const OnnxBody& body, const std::vector<Var>& initial_states,
                                 const std::vector<Var>& scan_inputs, const OnnxScanOptions& options,
                                 std::span<const Keep> keep) {
  return run_scan("onnx_scan", body, initial_states, scan_inputs, options, keep);
}

OnnxLoopResult onnx_loop_keeping(const OnnxBody& body, const std::vector<Var>& initial_states,
                                 const OnnxLoopOptions& options, std::span<const Keep> keep) {
  return run_loop("onnx_loop", body, initial_states, options, keep);
}
}  // namespace detail

}  // namespace recur
