#include <recur/ops/onnx/import/graph_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

Value input_of(const Scope& scope, const ::onnx::NodeProto& node, const std::string& name,
             const ModelState& model) {
  if (const Value* v = scope.find(name)) return *v;
  fail<ValueError>("onnx", model.origin, ": node '", node.name(), "' (", node.op_type(), ") reads '", name,
                   "', which no graph input, initializer or earlier node gives");
}

bool is_computed(const Value& v) { return !std::holds_alternative<Var>(v) || std::get<Var>(v).defined(); }

std::vector<Value> values_of(const std::vector<Var>& vars) { return {vars.begin(), vars.end()}; }

// A Gather or Slice of a scan output that stands in for the stacked one (a Scan or Loop
// ran it with Keep::last, last_reads_detail.hpp) gives its last element.
std::optional<Value> read_stand_in(const ModelState& model, const ::onnx::NodeProto& node, const Scope& scope,
                                   std::span<const Value> inputs) {
  if (!model.last_reads.readers.count(&node)) return std::nullopt;
  const auto axis = scope.last_only_axis(node.input(0));
  if (!axis) return std::nullopt;
  const Var* indices = inputs.size() > 1 ? std::get_if<Var>(&inputs[1]) : nullptr;
  return read_last(node, std::get<Var>(inputs[0]), *axis, indices ? *indices : Var());
}

// ValueError unless the graph output `v` (a tensor, or each tensor of a sequence) has the
// dtype that holds the element type its ValueInfo declares (model.hpp); an output that
// declares none is not checked. A Loop body that gives another type is invalid ONNX.
void check_declared_dtype(const ModelState& model, const ::onnx::GraphProto& graph, const ::onnx::ValueInfoProto& info,
                          const Value& v) {
  const auto& type = info.type();
  const std::int32_t element = type.has_tensor_type() ? type.tensor_type().elem_type()
                               : type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type()
                                   ? type.sequence_type().elem_type().tensor_type().elem_type()
                                   : 0;
  if (element == ::onnx::TensorProto::UNDEFINED) return;
  const std::string where = model.origin + ": graph '" + graph.name() + "' output '" + info.name() + "'";
  const DType want = dtype_of_element_type(element, where);
  const auto check = [&](const Var& x) {
    if (x.defined() && x.dtype() != want)
      fail<ValueError>("onnx", where, " is declared ", ::onnx::TensorProto::DataType_Name(element), " (held as ", want,
                       "), the graph computes ", x.dtype());
  };
  if (const auto* x = std::get_if<Var>(&v)) check(*x);
  else for (const auto& x : std::get<Sequence>(v)) check(x);
}

void run_node(const ModelState& model, const ::onnx::NodeProto& node, Scope& scope) {
  std::vector<Value> inputs;
  inputs.reserve(static_cast<std::size_t>(node.input_size()));
  for (const auto& name : node.input()) inputs.push_back(name.empty() ? Value(Var()) : input_of(scope, node, name, model));
  const NodeContext context(model, node, std::move(inputs), scope);
  const OpImport* op = registry().find(node.op_type(), model.opset);
  if (!op || !in_default_domain(node.domain())) context.unsupported("recur does not import this op");
  const auto stand_in = read_stand_in(model, node, scope, context.values());
  const std::vector<Value> outputs = stand_in            ? std::vector<Value>{*stand_in}
                                     : op->run_values    ? op->run_values(context)
                                                         : values_of(op->run(context));
  for (int i = 0; i < node.output_size(); ++i) {
    const std::string& name = node.output(i);
    if (name.empty()) continue;
    const auto k = static_cast<std::size_t>(i);
    if (k >= outputs.size() || !is_computed(outputs[k])) context.unsupported("output ", i, " ('", name, "') is not computed");
    scope.bind(name, outputs[k]);
  }
  for (const auto& [output, axis] : context.last_only_outputs()) scope.mark_last_only(node.output(static_cast<int>(output)), axis);
}

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->outer_) {
    const auto it = s->values_.find(name);
    if (it != s->values_.end()) return &it->second;
  }
  return nullptr;
}

std::vector<Value> run_nodes(const ModelState& model, const ::onnx::GraphProto& graph, Scope& scope) {
  for (const auto& node : graph.node()) {
    if (scope.options().cancel.stop_requested())
      fail<CancelledError>("onnx_io::Model::run", model.origin, ": the run was cancelled (RunOptions::cancel) before node '",
                           node.name(), "' (", node.op_type(), ")");
    run_node(model, node, scope);
  }
  std::vector<Value> outputs;
  for (const auto& output : graph.output()) {
    const Value* v = scope.find(output.name());
    if (!v)
      fail<ValueError>("onnx", model.origin, ": graph '", graph.name(), "' output '", output.name(),
                       "' is computed by no node");
    check_declared_dtype(model, graph, output, *v);
    outputs.push_back(*v);
  }
  return outputs;
}

void bind_initializers(const ModelState& model, const ::onnx::GraphProto& graph, Scope& scope) {
  for (const auto& init : graph.initializer()) scope.bind(init.name(), Var(model.parameter_by_name.find(init.name())->second));
}

std::vector<Value> run_graph(const ModelState& model, const ::onnx::GraphProto& graph, std::span<const Value> inputs,
                           const Scope* outer) {
  Scope scope(outer);
  bind_initializers(model, graph, scope);
  if (static_cast<std::size_t>(graph.input_size()) != inputs.size())
    fail<ValueError>("onnx", model.origin, ": body graph '", graph.name(), "' takes ", graph.input_size(),
                     " inputs, its node gives it ", inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) scope.bind(graph.input(static_cast<int>(i)).name(), inputs[i]);
  return run_nodes(model, graph, scope);
}

void for_each_body(const ::onnx::NodeProto& node, const std::function<void(const ::onnx::GraphProto&)>& visit) {
  for (const auto& a : node.attribute()) {
    if (a.has_g()) visit(a.g());
    for (const auto& g : a.graphs()) visit(g);
  }
}

void for_each_graph(const ::onnx::GraphProto& graph, const std::function<void(const ::onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node())
    for_each_body(node, [&](const ::onnx::GraphProto& body) { for_each_graph(body, visit); });
}

}  // namespace recur::onnx_io::detail
