#include <recur/ops/onnx/model.hpp>

#include <algorithm>
#include <fstream>
#include <functional>
#include <sstream>

#include <onnx/checker.h>

#include <recur/autodiff/tape.hpp>
#include <recur/autodiff/tape_access.hpp>

#include <recur/ops/onnx/graph_detail.hpp>
#include <recur/ops/onnx/registry_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx {
namespace {

using detail::ModelState;

// Calls visit on the graph and on every body graph inside it, outermost first.
void for_each_graph(const ::onnx::GraphProto& graph, const std::function<void(const ::onnx::GraphProto&)>& visit) {
  visit(graph);
  for (const auto& node : graph.node())
    for (const auto& a : node.attribute()) {
      if (a.has_g()) for_each_graph(a.g(), visit);
      for (const auto& g : a.graphs()) for_each_graph(g, visit);
    }
}

std::int64_t default_domain_opset(const ::onnx::ModelProto& proto) {
  for (const auto& o : proto.opset_import())
    if (o.domain().empty() || o.domain() == "ai.onnx") return o.version();
  return 0;
}

bool imported(const ::onnx::NodeProto& node, std::int64_t opset) {
  return (node.domain().empty() || node.domain() == "ai.onnx") && detail::registry().find(node.op_type(), opset);
}

// The nodes recur does not import: "OpType (opset N)" once per op type, or with
// `with_names` "node 'name' (OpType, opset N)" per node.
std::vector<std::string> unsupported_nodes(const ::onnx::ModelProto& proto, std::int64_t opset, bool with_names) {
  std::vector<std::string> out;
  for_each_graph(proto.graph(), [&](const ::onnx::GraphProto& g) {
    for (const auto& node : g.node()) {
      if (imported(node, opset)) continue;
      const std::string op = (node.domain().empty() ? "" : node.domain() + ".") + node.op_type();
      const std::string opset_text = "opset " + std::to_string(opset);
      std::string what = with_names ? "node '" + node.name() + "' (" + op + ", " + opset_text + ")"
                                    : op + " (" + opset_text + ")";
      if (std::find(out.begin(), out.end(), what) == out.end()) out.push_back(std::move(what));
    }
  });
  return out;
}

::onnx::ModelProto parse(std::string_view bytes, std::string_view origin) {
  ::onnx::ModelProto proto;
  if (bytes.size() > static_cast<std::size_t>(INT32_MAX) || !proto.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())))
    fail<IOError>("onnx::load", origin, ": not a serialized ONNX ModelProto (truncated or corrupt)");
  return proto;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) fail<IOError>("onnx::load", "cannot open '", path, "'");
  std::ostringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void add_parameters(ModelState& state) {
  for_each_graph(state.proto.graph(), [&](const ::onnx::GraphProto& g) {
    for (const auto& init : g.initializer()) {
      if (state.parameter_by_name.count(init.name()))
        fail<ValueError>("onnx::load", state.origin, ": two initializers are named '", init.name(), "'");
      Shared p(detail::tensor_from_proto(init, state.origin + ": initializer '" + init.name() + "'"), init.name());
      state.parameters.push_back(p);
      state.parameter_by_name.emplace(init.name(), p);
    }
  });
}

const ::onnx::ValueInfoProto* graph_input(const ::onnx::GraphProto& g, const std::string& name) {
  for (const auto& in : g.input())
    if (in.name() == name) return &in;
  return nullptr;
}

// ValueError unless `value` has the dtype and the fixed dimensions the graph input declares.
void check_fed(const ModelState& state, const ::onnx::ValueInfoProto& info, const Var& value) {
  if (!info.type().has_tensor_type()) return;
  const auto& type = info.type().tensor_type();
  const DType want = detail::dtype_of_element_type(type.elem_type(), "graph input '" + info.name() + "'");
  bool fits = value.dtype() == want;
  if (type.has_shape()) {
    fits = fits && value.rank() == type.shape().dim_size();
    for (int i = 0; fits && i < type.shape().dim_size(); ++i) {
      const auto& d = type.shape().dim(i);
      if (d.has_dim_value()) fits = d.dim_value() == value.shape()[static_cast<std::size_t>(i)];
    }
  }
  if (!fits)
    fail<ValueError>("onnx::Model::run", state.origin, ": input '", info.name(), "' was fed a ", value.dtype(),
                     " tensor of shape ", to_string(value.shape()), ", the model declares ", info.type().DebugString());
}

// UnsupportedError unless every graph input and output is a tensor of a type recur holds.
void check_graph_types(const ModelState& state) {
  const auto check = [&](const ::onnx::ValueInfoProto& info, const char* what) {
    const std::string where = state.origin + ": graph " + what + " '" + info.name() + "'";
    if (!info.type().has_tensor_type())
      throw UnsupportedError("recur::onnx::load: " + where + " is not a tensor (sequences, maps and optionals are not imported)");
    detail::dtype_of_element_type(info.type().tensor_type().elem_type(), where);
  };
  for (const auto& in : state.proto.graph().input()) check(in, "input");
  for (const auto& out : state.proto.graph().output()) check(out, "output");
}

}  // namespace

Model load_from_bytes(std::string_view bytes, std::string_view origin) {
  auto state = std::make_shared<ModelState>();
  state->origin = std::string(origin);
  state->proto = parse(bytes, origin);
  try {
    ::onnx::checker::check_model(state->proto);
  } catch (const std::exception& e) {
    fail<ValueError>("onnx::load", origin, ": the ONNX checker rejects the model: ", e.what());
  }
  state->opset = default_domain_opset(state->proto);
  const auto unsupported = unsupported_nodes(state->proto, state->opset, true);
  if (!unsupported.empty())
    throw UnsupportedError(::recur::detail::concat("recur::onnx::load: ", origin, ": ", unsupported.front(),
                                                   ": recur does not import this op (see docs/onnx.md)"));
  check_graph_types(*state);
  add_parameters(*state);
  return Model(std::move(state));
}

Model load(const std::string& path) { return load_from_bytes(read_file(path), path); }

std::vector<std::string> unsupported_ops(const std::string& path) {
  const auto proto = parse(read_file(path), path);
  return unsupported_nodes(proto, default_domain_opset(proto), false);
}

std::map<std::string, Var> Model::run(const std::map<std::string, Var>& inputs) const {
  const auto& graph = state_->proto.graph();
  // The feed is checked before anything is recorded.
  for (const auto& [name, value] : inputs) {
    const auto* info = graph_input(graph, name);
    if (!info) fail<ValueError>("onnx::Model::run", state_->origin, ": the model has no input '", name, "'");
    check_fed(*state_, *info, value);
  }
  for (const auto& name : input_names())
    if (!inputs.count(name)) fail<ValueError>("onnx::Model::run", state_->origin, ": input '", name, "' is not fed");
  // A node that fails half-way leaves the tape as it was: what the run recorded is dropped.
  Tape& tape = Tape::current();
  const std::uint32_t mark = tape.size();
  std::vector<Var> values;
  try {
    detail::Scope scope;
    detail::bind_initializers(*state_, graph, scope);
    for (const auto& [name, value] : inputs) scope.bind(name, value);
    values = detail::run_nodes(*state_, graph, scope);
  } catch (...) {
    TapeAccess::truncate(tape, mark);
    throw;
  }
  std::map<std::string, Var> out;
  for (int i = 0; i < graph.output_size(); ++i) out.emplace(graph.output(i).name(), values[static_cast<std::size_t>(i)]);
  return out;
}

const std::vector<Shared>& Model::parameters() const { return state_->parameters; }

NamedShared Model::named_parameters() const {
  NamedShared out;
  for (const auto& p : state_->parameters) out.emplace_back(p.name(), p);
  return out;
}

const Shared& Model::parameter(std::string_view name) const {
  const auto it = state_->parameter_by_name.find(name);
  if (it == state_->parameter_by_name.end()) {
    std::string known;
    for (const auto& p : state_->parameters) known += (known.empty() ? "" : ", ") + p.name();
    fail<ValueError>("onnx::Model::parameter", state_->origin, ": no initializer '", name, "' (there are: ", known, ")");
  }
  return it->second;
}

std::vector<std::string> Model::input_names() const {
  std::vector<std::string> out;
  for (const auto& in : state_->proto.graph().input())
    if (!state_->parameter_by_name.count(in.name())) out.push_back(in.name());
  return out;
}

std::vector<std::string> Model::output_names() const {
  std::vector<std::string> out;
  for (const auto& o : state_->proto.graph().output()) out.push_back(o.name());
  return out;
}

std::int64_t Model::opset() const { return state_->opset; }

}  // namespace recur::onnx
