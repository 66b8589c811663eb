// ONNX's Scan on recur's scan engine, through recur's ONNX face (ops/scan/onnx.hpp): the
// body graph runs once per step as recorded ops, reading outer-scope values (gradients
// reach them). Opset 8's batched form runs one scan per batch entry and stacks them.
// Element types are those recur holds (model.hpp), the same for every opset up to 23.
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/op_helpers_detail.hpp>
#include <recur/ops/onnx/registry_detail.hpp>
#include <recur/ops/scan/onnx.hpp>

namespace recur::onnx::detail {
namespace {

std::vector<std::int64_t> ints_or_empty(const NodeContext& c, const std::string& name) {
  return c.ints_attr(name).value_or(std::vector<std::int64_t>{});
}

// One ONNX-face scan of the body over `states` and `sequences`; final states then scan outputs.
std::vector<Var> scan_once(const NodeContext& c, const std::vector<Var>& states, const std::vector<Var>& sequences,
                           const ScanOptions& options) {
  const auto& body = c.graph_attr("body");
  if (static_cast<std::size_t>(body.input_size()) != states.size() + sequences.size())
    c.invalid("the body takes ", body.input_size(), " inputs, the node gives ", states.size(), " states and ",
              sequences.size(), " scan inputs");
  if (static_cast<std::size_t>(body.output_size()) < states.size())
    c.invalid("the body gives ", body.output_size(), " outputs, fewer than its ", states.size(), " states");
  const Body step = [&c, &body](std::span<const Var> args) { return c.run_tensor_body(body, args); };
  ScanOptions with_run_options = options;
  with_run_options.truncate_gradient = c.run_options().truncate_gradient;
  with_run_options.checkpoint = c.run_options().checkpoint;
  auto result = ::recur::onnx::scan(step, states, sequences, with_run_options);
  std::vector<Var> out = std::move(result.final_states);
  out.insert(out.end(), result.scan_outputs.begin(), result.scan_outputs.end());
  return out;
}

std::vector<Var> scan_import(const NodeContext& c) {
  const auto n_sequences = static_cast<std::size_t>(c.required_int_attr("num_scan_inputs"));
  if (n_sequences > c.input_count()) c.invalid("num_scan_inputs is larger than the number of inputs");
  const std::size_t n_states = c.input_count() - n_sequences;
  std::vector<Var> states, sequences;
  for (std::size_t i = 0; i < c.input_count(); ++i) (i < n_states ? states : sequences).push_back(c.input(i));
  ScanOptions options;
  options.scan_input_axes = ints_or_empty(c, "scan_input_axes");
  options.scan_input_directions = ints_or_empty(c, "scan_input_directions");
  options.scan_output_axes = ints_or_empty(c, "scan_output_axes");
  options.scan_output_directions = ints_or_empty(c, "scan_output_directions");
  return scan_once(c, states, sequences, options);
}

// Opset 8: input 0 is the optional sequence_lens, then states [batch, ...] and scan inputs
// [batch, time, ...]; outputs keep the batch axis first.
std::vector<Var> scan8_import(const NodeContext& c) {
  const auto n_sequences = static_cast<std::size_t>(c.required_int_attr("num_scan_inputs"));
  if (n_sequences + 1 > c.input_count()) c.invalid("num_scan_inputs is larger than the number of inputs");
  const std::size_t n_states = c.input_count() - 1 - n_sequences;
  if (n_sequences == 0) c.invalid("there are no scan inputs");
  const std::int64_t batch = c.input(1 + n_states).size(0);
  const std::int64_t steps = c.input(1 + n_states).size(1);
  if (c.has_input(0))
    for (auto length : c.ints_input(0))
      if (length != steps) c.unsupported("sequence_lens shorter than the scan inputs (", length, " of ", steps, ")");
  ScanOptions options;
  options.scan_input_directions = ints_or_empty(c, "directions");
  std::vector<std::vector<Var>> per_output;
  for (std::int64_t b = 0; b < batch; ++b) {
    std::vector<Var> states, sequences;
    for (std::size_t i = 1; i < c.input_count(); ++i)
      (i <= n_states ? states : sequences).push_back(index(c.input(i), 0, b));
    const auto outputs = scan_once(c, states, sequences, options);
    per_output.resize(outputs.size());
    for (std::size_t k = 0; k < outputs.size(); ++k) per_output[k].push_back(outputs[k]);
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

}  // namespace recur::onnx::detail
