// ONNX's Scan on recur's scan engine, through recur's ONNX face (ops/scan/onnx.hpp): the
// body graph runs once per step as recorded ops, reading outer-scope values (gradients
// reach them). A scan output the graph reads only at its last step runs with Keep::last
// (last_reads_detail.hpp). Opset 8's batched form runs one scan per batch entry, over its
// sequence_lens steps (the scan outputs padded with zeros), and stacks them.
// Element types are those recur holds (model.hpp), the same for every opset up to 23.
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/scan/onnx_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

std::vector<std::int64_t> ints_or_empty(const NodeContext& c, const std::string& name) {
  return c.ints_attr(name).value_or(std::vector<std::int64_t>{});
}

// One ONNX-face scan of the body over `states` and `sequences`, scan output k kept as
// keep[k] (past its end: Keep::all); final states then scan outputs.
std::vector<Var> scan_once(const NodeContext& c, const std::vector<Var>& states, const std::vector<Var>& sequences,
                           const OnnxScanOptions& options, std::span<const Keep> keep = {}) {
  const auto& body = c.graph_attr("body");
  if (static_cast<std::size_t>(body.input_size()) != states.size() + sequences.size())
    c.invalid("the body takes ", body.input_size(), " inputs, the node gives ", states.size(), " states and ",
              sequences.size(), " scan inputs");
  if (static_cast<std::size_t>(body.output_size()) < states.size())
    c.invalid("the body gives ", body.output_size(), " outputs, fewer than its ", states.size(), " states");
  const OnnxBody step = [&c, &body](std::span<const Var> args) { return c.run_tensor_body(body, args); };
  OnnxScanOptions with_run_options = options;
  with_run_options.truncate_gradient = c.run_options().truncate_gradient;
  with_run_options.checkpoint = c.run_options().checkpoint;
  auto result = recur::detail::onnx_scan_keeping(step, states, sequences, with_run_options, keep);
  std::vector<Var> out = std::move(result.final_states);
  out.insert(out.end(), result.scan_outputs.begin(), result.scan_outputs.end());
  return out;
}

// The num_scan_inputs attribute, checked to fit the node's inputs after the first `before`
// (opset 8's sequence_lens); ValueError naming the node otherwise.
std::size_t scan_input_count(const NodeContext& c, std::size_t before) {
  const std::int64_t n = c.required_int_attr("num_scan_inputs");
  if (n < 0 || n > static_cast<std::int64_t>(c.input_count()) - static_cast<std::int64_t>(before))  // no n + before: n may be INT64_MAX
    c.invalid("num_scan_inputs = ", n, " does not fit ", c.input_count(), " inputs");
  return static_cast<std::size_t>(n);
}

std::int64_t entry(const std::vector<std::int64_t>& values, std::size_t k) { return k < values.size() ? values[k] : 0; }

// The number of steps, the length of the first scan input along its axis (nullopt when the
// axis is out of range: the scan reports that).
std::optional<std::int64_t> steps_of(const std::vector<Var>& sequences, const OnnxScanOptions& o) {
  if (sequences.empty()) return std::nullopt;
  const std::int64_t rank = sequences[0].rank(), axis = entry(o.scan_input_axes, 0);
  if (axis < -rank || axis >= rank) return std::nullopt;
  return sequences[0].size(axis < 0 ? axis + rank : axis);
}

std::vector<Var> scan_import(const NodeContext& c) {
  const std::size_t n_sequences = scan_input_count(c, 0);
  const std::size_t n_states = c.input_count() - n_sequences;
  std::vector<Var> states, sequences;
  for (std::size_t i = 0; i < c.input_count(); ++i) (i < n_states ? states : sequences).push_back(c.input(i));
  OnnxScanOptions options;
  options.scan_input_axes = ints_or_empty(c, "scan_input_axes");
  options.scan_input_directions = ints_or_empty(c, "scan_input_directions");
  options.scan_output_axes = ints_or_empty(c, "scan_output_axes");
  options.scan_output_directions = ints_or_empty(c, "scan_output_directions");
  const auto n_outputs = c.output_count() > n_states ? c.output_count() - n_states : 0;
  const auto steps = steps_of(sequences, options);
  if (steps > 0) c.check_iteration(*steps - 1);
  const std::vector<Keep> keep = last_read_outputs(c, n_outputs, options.scan_output_axes,
                                                   options.scan_output_directions, {steps, steps.value_or(0)});
  std::vector<Var> out = scan_once(c, states, sequences, options, keep);
  for (std::size_t k = 0; k < keep.size() && n_states + k < out.size(); ++k)
    if (keep[k] == Keep::last)
      out[n_states + k] = last_read_stand_in(c, n_states + k, out[n_states + k], entry(options.scan_output_axes, k));
  return out;
}

// A scan output of `length` steps (axis 0) padded with zeros to `steps`: opset 8 leaves the
// steps past a sequence's length undefined, and zeros are what ONNX's later recurrent ops write.
Var zero_padded(const Var& output, std::int64_t steps) {
  if (output.size(0) == steps) return output;
  Shape rest = output.shape();
  rest[0] = steps - output.size(0);
  return concat({output, Var(zeros(rest, output.dtype()))}, 0);
}

// Opset 8: input 0 is the optional sequence_lens, then states [batch, ...] and scan inputs
// [batch, time, ...]; outputs keep the batch axis first.
std::vector<Var> scan8_import(const NodeContext& c) {
  const std::size_t n_sequences = scan_input_count(c, 1);
  const std::size_t n_states = c.input_count() - 1 - n_sequences;
  if (n_sequences == 0) c.invalid("there are no scan inputs");
  const std::int64_t batch = c.input(1 + n_states).size(0);
  const std::int64_t steps = c.input(1 + n_states).size(1);
  for (std::size_t i = 1; i < c.input_count(); ++i)
    if (c.input(i).rank() < 1 || c.input(i).size(0) != batch)
      c.invalid("input ", i, " has shape ", to_string(c.input(i).shape()), ", not a batch of ", batch, " first");
  if (c.has_input(0) && (c.input(0).rank() != 1 || c.input(0).size(0) != batch))
    c.invalid("sequence_lens has shape ", to_string(c.input(0).shape()), ", not [", batch, "] (one entry per batch entry)");
  const std::vector<std::int64_t> lengths = c.has_input(0) ? c.ints_input(0) : std::vector<std::int64_t>(batch, steps);
  for (auto length : lengths)
    if (length < 0 || length > steps) c.invalid("sequence_lens holds ", length, ", outside [0, ", steps, "]");
  for (const auto length : lengths) c.check_iteration(length - 1);
  OnnxScanOptions options;
  options.scan_input_directions = ints_or_empty(c, "directions");
  std::vector<std::vector<Var>> per_output;
  for (std::int64_t b = 0; b < batch; ++b) {
    // Entry b's first lengths[b] steps (a reverse direction runs them from the last).
    const std::int64_t length = lengths[static_cast<std::size_t>(b)];
    std::vector<Var> states, sequences;
    for (std::size_t i = 1; i < c.input_count(); ++i) {
      const Var entry = index(c.input(i), 0, b);
      if (i <= n_states) states.push_back(entry);
      else sequences.push_back(length < steps ? slice(entry, 0, 0, length) : entry);
    }
    const auto outputs = scan_once(c, states, sequences, options);
    per_output.resize(outputs.size());
    for (std::size_t k = 0; k < outputs.size(); ++k)
      per_output[k].push_back(k < n_states ? outputs[k] : zero_padded(outputs[k], steps));
  }
  std::vector<Var> out;
  for (const auto& pieces : per_output) out.push_back(stack(pieces, 0));
  return out;
}

}  // namespace

void add_scan_ops(Registry& r) {
  r.add("Scan", {scan8_import, 8, 8});
  r.add("Scan", {scan_import, 9});
}

}  // namespace recur::onnx_io::detail
