// recur::onnx_io::save of a scan (export_scan.hpp): the outer graph of one Scan node, its
// body built from the traced step (export_step_trace.cpp, export_step_ops.cpp).
#include <recur/ops/onnx/export_scan.hpp>

#include <recur/core/creation.hpp>
#include <recur/core/error.hpp>
#include <recur/core/file_io.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_step_ops_detail.hpp>
#include <recur/ops/onnx/export/export_step_trace_detail.hpp>

namespace recur::onnx_io {
namespace {

constexpr std::string_view kOp = "onnx_io::save";
constexpr std::int64_t kOpset = 16;

using detail::Dim;

// A step value's dimensions with a symbolic T inserted at the scan axis: a scan input's or
// a stacked scan output's.
std::vector<Dim> with_t(std::vector<Dim> dims, std::int64_t axis) {
  dims.insert(dims.begin() + axis, Dim(std::string("T")));
  return dims;
}

// `given` when the caller named them (one name each), else prefix_0, prefix_1, ...
std::vector<std::string> names_of(const std::vector<std::string>& given, std::size_t count, const std::string& prefix,
                                  const char* option) {
  if (given.empty()) {
    std::vector<std::string> names;
    for (std::size_t k = 0; k < count; ++k) names.push_back(prefix + "_" + std::to_string(k));
    return names;
  }
  if (given.size() != count)
    fail<ValueError>(kOp, "option '", option, "' has ", given.size(), " names for ", count, " values");
  return given;
}

// A per-input or per-output list of options: empty (all `fallback`) or one entry each.
std::vector<std::int64_t> per_value(const std::vector<std::int64_t>& given, std::size_t count, std::int64_t fallback,
                                    const char* option) {
  if (given.empty()) return std::vector<std::int64_t>(count, fallback);
  if (given.size() != count)
    fail<ValueError>(kOp, "option '", option, "' has ", given.size(), " entries for ", count, " values");
  return given;
}

void check_directions(const std::vector<std::int64_t>& directions, const char* option) {
  for (std::int64_t d : directions)
    if (d != 0 && d != 1) fail<ValueError>(kOp, "option '", option, "' has ", d, ": directions are 0 or 1");
}

// The model under construction: the outer graph and the body, and every name in both.
struct ScanGraph {
  const OnnxBody& body;
  const std::vector<Tensor>& states;
  const std::vector<Tensor>& sequences;
  const ScanExportOptions& options;
  detail::Names names{};
  ::onnx::GraphProto graph{};

  detail::BatchTrace* batch = nullptr;  // with options.batch_axis, once traced
  std::size_t n = states.size(), m = sequences.size();
  std::vector<std::int64_t> input_axes = per_value(options.scan.scan_input_axes, m, 0, "scan_input_axes");
  std::vector<std::int64_t> input_directions =
      per_value(options.scan.scan_input_directions, m, 0, "scan_input_directions");

  // Graph names given by the caller are taken first, as they are (twice is an error).
  std::vector<std::string> take(const std::vector<std::string>& wanted) {
    for (const std::string& name : wanted)
      if (names.unique(name) != name) fail<ValueError>(kOp, "the name '", name, "' is given to two values");
    return wanted;
  }

  // The states, and one element of each scan input (its first; zeros of its shape without
  // the scan axis when it is empty): only integer ones' values are used.
  std::vector<Tensor> step_examples() {
    if (m == 0) fail<ValueError>(kOp, "an ONNX Scan needs a scan input: its length is the number of steps");
    check_directions(input_directions, "scan_input_directions");
    std::vector<Tensor> examples = states;
    for (std::size_t j = 0; j < m; ++j) {
      Shape shape = sequences[j].shape();
      input_axes[j] = normalize_axis(kOp, input_axes[j], shape, "scan_input_axes");
      const bool empty = shape[static_cast<std::size_t>(input_axes[j])] == 0;
      shape.erase(shape.begin() + input_axes[j]);
      examples.push_back(empty ? zeros(shape, sequences[j].dtype()) : index(sequences[j], input_axes[j], 0));
    }
    return examples;
  }

  // With a symbolic batch: the batch size, checked the same along the batch axis of every
  // step example, and the examples at one more batch element (integer ones, token ids,
  // repeat their own along the batch).
  std::pair<std::int64_t, std::vector<Tensor>> wider_examples(const std::vector<Tensor>& examples) const {
    std::int64_t size = -1;
    std::vector<Tensor> wider;
    for (std::size_t k = 0; k < examples.size(); ++k) {
      const Tensor& e = examples[k];
      const std::string what = k < n ? "state " + std::to_string(k) : "scan input " + std::to_string(k - n);
      if (e.rank() == 0) fail<ValueError>(kOp, "option 'batch_axis': ", what, " is a scalar, with no batch axis");
      const std::int64_t axis = normalize_axis(kOp, *options.batch_axis, e.shape(), "batch_axis");
      if (size >= 0 && e.size(axis) != size)
        fail<ValueError>(kOp, "option 'batch_axis' = ", *options.batch_axis, ": ", what, " (step shape ",
                         to_string(e.shape()), ") has ", e.size(axis), " there, state or scan input 0 ", size);
      size = e.size(axis);
      if (size == 0) fail<ValueError>(kOp, "option 'batch_axis': the examples' batch is empty");
      std::vector<std::int64_t> rows;
      for (std::int64_t r = 0; r <= size; ++r) rows.push_back(r % size);
      wider.push_back(recur::take(e, from_vector(rows, {size + 1}), axis));
    }
    return {size, wider};
  }

  // The graph dimensions of traced node `node`'s value: sizes that scale with the batch as
  // `batch_name` (or "k*batch_name").
  std::vector<Dim> dims_of(const detail::StepTrace& trace, std::uint32_t node, const std::string& what) const {
    const Shape& shape = trace.value(node).shape();
    const std::vector<std::int64_t> factors = detail::batch_factors(trace, batch, node);
    std::vector<Dim> dims;
    for (std::size_t k = 0; k < shape.size(); ++k) {
      if (factors[k] < 0)
        fail<ValueError>(kOp, what, " has shape ", to_string(shape), " at batch size ", batch->size,
                         ": a size that changes with the batch but is no multiple of it (option 'batch_axis')");
      if (factors[k] == 0) dims.emplace_back(shape[k]);
      else dims.emplace_back((factors[k] == 1 ? "" : std::to_string(factors[k]) + "*") + options.batch_name);
    }
    return dims;
  }

  void check_states(const detail::StepTrace& trace) {
    if (trace.outputs.size() < n)
      fail<ValueError>(kOp, "the step returns ", trace.outputs.size(), " values for ", n, " states");
    for (std::size_t i = 0; i < n; ++i) {
      const Tensor& next = trace.value(trace.outputs[i]);
      if (next.dtype() != states[i].dtype())
        fail<DTypeError>(kOp, "the step's new state ", i, " has dtype ", next.dtype(), ", the state ",
                         states[i].dtype());
      if (next.shape() != states[i].shape())
        fail<ShapeError>(kOp, "the step's new state ", i, " has shape ", to_string(next.shape()), ", the state ",
                         to_string(states[i].shape()));
    }
  }

  // The body: the traced step's inputs, each recorded op, and Identity nodes for its
  // outputs; the Shared variables it reads become the outer graph's initializers.
  ::onnx::GraphProto step_body(const detail::StepTrace& trace, const std::vector<std::string>& inputs,
                               const std::vector<std::string>& outputs) {
    ::onnx::GraphProto body_graph;
    body_graph.set_name(options.graph_name + "_body");
    detail::StepGraph step{trace, body_graph, names, kOp, {}, batch};
    for (const auto& [node, shared] : trace.parameters) {
      const std::string name = names.unique(shared.name().empty() ? "parameter" : shared.name());
      detail::add_initializer(graph, name, shared.value());
      step.value_names.emplace(node, name);
    }
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      const Tensor& value = trace.value(trace.inputs[i]);
      const std::string name = names.unique("body_" + inputs[i]);
      detail::add_input(body_graph, name, detail::element_type(value.dtype()), dims_of(trace, trace.inputs[i], name));
      step.value_names.emplace(trace.inputs[i], name);
      if (batch && i == 0) batch->source = name;  // the batch size the body runs at, read off its shape
    }
    for (const detail::TracedOp& op : trace.ops) detail::add_op(step, op);
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& value = trace.value(trace.outputs[i]);
      const std::string name = names.unique("body_" + outputs[i]);
      detail::add_node(body_graph, "Identity", {step.name_of(trace.outputs[i])}, {name}, names.unique("node_" + name));
      detail::add_output(body_graph, name, detail::element_type(value.dtype()), dims_of(trace, trace.outputs[i], name));
    }
    return body_graph;
  }

  // The outer graph's inputs and outputs: a symbolic T along each scan axis.
  void add_graph_values(const detail::StepTrace& trace, const std::vector<std::string>& inputs,
                        const std::vector<std::string>& outputs, std::vector<std::int64_t>& output_axes) {
    for (std::size_t i = 0; i < n; ++i)
      detail::add_input(graph, inputs[i], detail::element_type(states[i].dtype()),
                        dims_of(trace, trace.inputs[i], inputs[i]));
    for (std::size_t j = 0; j < m; ++j) {
      detail::add_input(graph, inputs[n + j], detail::element_type(sequences[j].dtype()),
                        with_t(dims_of(trace, trace.inputs[n + j], inputs[n + j]), input_axes[j]));
    }
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& value = trace.value(trace.outputs[i]);
      std::vector<Dim> dims = dims_of(trace, trace.outputs[i], outputs[i]);
      if (i >= n) {
        std::int64_t& axis = output_axes[i - n];
        axis = normalize_axis(kOp, axis, value.shape(), "scan_output_axes", 1);
        dims = with_t(std::move(dims), axis);
      }
      detail::add_output(graph, outputs[i], detail::element_type(value.dtype()), dims);
    }
  }

  ::onnx::GraphProto build() {
    const std::vector<Tensor> examples = step_examples();
    const detail::StepTrace trace = detail::trace_step(kOp, body, examples);
    check_states(trace);
    // A symbolic batch: the step traced again at one more batch element, the same ops.
    std::optional<detail::StepTrace> wider;
    std::optional<detail::BatchTrace> batch_trace;
    if (options.batch_axis) {
      auto [size, wider_inputs] = wider_examples(examples);
      wider.emplace(detail::trace_step(kOp, body, wider_inputs));
      if (const std::string what = detail::op_difference(trace, *wider); !what.empty())
        fail<ValueError>(kOp, "option 'batch_axis': the step records other ops at batch size ", size + 1, " than at ",
                         size, " (", what, "): an ONNX body cannot");
      const std::int64_t axis = normalize_axis(kOp, *options.batch_axis, examples[0].shape(), "batch_axis");
      batch_trace.emplace(detail::BatchTrace{*wider, size, "", axis, ""});
      batch = &*batch_trace;
    }
    const std::size_t k = trace.outputs.size() - n;
    std::vector<std::int64_t> output_axes = per_value(options.scan.scan_output_axes, k, 0, "scan_output_axes");
    const std::vector<std::int64_t> output_directions =
        per_value(options.scan.scan_output_directions, k, 0, "scan_output_directions");
    check_directions(output_directions, "scan_output_directions");

    std::vector<std::string> inputs = take(names_of(options.state_names, n, "initial_state", "state_names"));
    const std::vector<std::string> scan_inputs =
        take(names_of(options.scan_input_names, m, "scan_input", "scan_input_names"));
    inputs.insert(inputs.end(), scan_inputs.begin(), scan_inputs.end());
    std::vector<std::string> outputs = take(names_of(options.final_state_names, n, "final_state", "final_state_names"));
    const std::vector<std::string> scan_outputs =
        take(names_of(options.scan_output_names, k, "scan_output", "scan_output_names"));
    outputs.insert(outputs.end(), scan_outputs.begin(), scan_outputs.end());

    graph.set_name(options.graph_name);
    ::onnx::GraphProto body_graph = step_body(trace, inputs, outputs);
    add_graph_values(trace, inputs, outputs, output_axes);
    ::onnx::NodeProto& scan = detail::add_node(graph, "Scan", inputs, outputs, names.unique("scan"));
    detail::set_attribute(scan, "body", std::move(body_graph));
    detail::set_attribute(scan, "num_scan_inputs", static_cast<std::int64_t>(m));
    detail::set_attribute(scan, "scan_input_axes", input_axes);
    detail::set_attribute(scan, "scan_input_directions", input_directions);
    if (k > 0) {
      detail::set_attribute(scan, "scan_output_axes", output_axes);
      detail::set_attribute(scan, "scan_output_directions", output_directions);
    }
    return std::move(graph);
  }
};

}  // namespace

::onnx::ModelProto scan_model(const OnnxBody& body, const std::vector<Tensor>& initial_states,
                              const std::vector<Tensor>& scan_inputs, const ScanExportOptions& options) {
  return detail::checked_model(kOp, ScanGraph{body, initial_states, scan_inputs, options}.build(), kOpset);
}

void save(const std::filesystem::path& path, const OnnxBody& body, const std::vector<Tensor>& initial_states,
          const std::vector<Tensor>& scan_inputs, const ScanExportOptions& options) {
  const std::string bytes = scan_model(body, initial_states, scan_inputs, options).SerializeAsString();
  recur::detail::write_atomically(path, kOp,
                                  [&](recur::detail::FileSink& sink) { sink.write(bytes.data(), bytes.size()); });
}

}  // namespace recur::onnx_io
