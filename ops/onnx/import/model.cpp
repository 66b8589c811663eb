#include <recur/ops/onnx/model.hpp>

#include <algorithm>
#include <functional>
#include <new>

#include <onnx/checker.h>

#include <recur/autodiff/tape.hpp>
#include <recur/core/file_io.hpp>
#include <recur/autodiff/tape_access.hpp>

#include <recur/ops/onnx/import/graph_detail.hpp>
#include <recur/ops/onnx/model_bytes_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>

namespace recur::onnx_io {
namespace {

using detail::for_each_graph;
using detail::in_default_domain;
using detail::ModelState;

std::int64_t default_domain_opset(const ::onnx::ModelProto& proto) {
  for (const auto& o : proto.opset_import())
    if (in_default_domain(o.domain())) return o.version();
  return 0;
}

bool imported(const ::onnx::NodeProto& node, std::int64_t opset) {
  return in_default_domain(node.domain()) && detail::registry().find(node.op_type(), opset);
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

void add_parameters(ModelState& state) {
  for_each_graph(state.proto.graph(), [&](const ::onnx::GraphProto& g) {
    for (const auto& init : g.initializer()) {
      if (state.parameter_by_name.count(init.name()))
        fail<ValueError>("onnx_io::load", state.origin, ": two initializers are named '", init.name(), "'");
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
  if (!info.type().has_tensor_type())
    fail<ValueError>("onnx_io::Model::run", state.origin, ": input '", info.name(), "' is a sequence, fed a tensor");
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
    fail<ValueError>("onnx_io::Model::run", state.origin, ": input '", info.name(), "' was fed a ", value.dtype(),
                     " tensor of shape ", to_string(value.shape()), ", the model declares ", info.type().DebugString());
}

// UnsupportedError unless every graph input and output is a tensor of a type recur holds.
void check_graph_types(const ModelState& state) {
  const auto check = [&](const ::onnx::ValueInfoProto& info, const char* what) {
    const std::string where = state.origin + ": graph " + what + " '" + info.name() + "'";
    const auto& type = info.type();
    const bool sequence = type.has_sequence_type() && type.sequence_type().elem_type().has_tensor_type();
    if (!type.has_tensor_type() && !sequence)
      throw UnsupportedError("recur::onnx_io::load: " + where +
                             " is neither a tensor nor a sequence of tensors (maps and optionals are not imported)");
    const auto& tensor = sequence ? type.sequence_type().elem_type().tensor_type() : type.tensor_type();
    detail::dtype_of_element_type(tensor.elem_type(), where);
  };
  for (const auto& in : state.proto.graph().input()) check(in, "input");
  for (const auto& out : state.proto.graph().output()) check(out, "output");
}

}  // namespace

Model load_from_bytes(std::string_view bytes, std::string_view origin) {
  auto state = std::make_shared<ModelState>();
  state->origin = std::string(origin);
  state->proto = detail::parse_model(bytes, origin);
  detail::refuse_external_data(state->proto, origin);
  try {
    ::onnx::checker::check_model(state->proto);
  } catch (const std::exception& e) {
    fail<ValueError>("onnx_io::load", origin, ": the ONNX checker rejects the model: ", e.what());
  }
  state->opset = default_domain_opset(state->proto);
  const auto unsupported = unsupported_nodes(state->proto, state->opset, true);
  if (!unsupported.empty())
    throw UnsupportedError(::recur::detail::concat("recur::onnx_io::load: ", origin, ": ", unsupported.front(),
                                                   ": recur does not import this op (see docs/onnx.md)"));
  check_graph_types(*state);
  add_parameters(*state);
  state->last_reads = detail::find_last_reads(state->proto.graph(), state->opset);
  return Model(std::move(state));
}

Model load(const std::string& path) { return load_from_bytes(detail::read_proto_file(path, "onnx_io::load"), path); }

std::vector<std::string> unsupported_ops(const std::string& path) {
  const auto proto = detail::parse_model(detail::read_proto_file(path, "onnx_io::unsupported_ops"), path);
  return unsupported_nodes(proto, default_domain_opset(proto), false);
}

std::map<std::string, Var> Model::run(const std::map<std::string, Var>& inputs, const RunOptions& options) const {
  for (const auto& output : state_->proto.graph().output())
    if (!output.type().has_tensor_type())
      fail<ValueError>("onnx_io::Model::run", state_->origin, ": output '", output.name(),
                       "' is a sequence: run_with_sequences gives it");
  return run_with_sequences(inputs, {}, options).tensors;
}

Outputs Model::run_with_sequences(const std::map<std::string, Var>& inputs,
                                  const std::map<std::string, std::vector<Var>>& sequence_inputs,
                                  const RunOptions& options) const {
  const auto& graph = state_->proto.graph();
  // The feed is checked before anything is recorded.
  const auto input_info = [&](const std::string& name) {
    const auto* info = graph_input(graph, name);
    if (!info) fail<ValueError>("onnx_io::Model::run", state_->origin, ": the model has no input '", name, "'");
    return info;
  };
  for (const auto& [name, value] : inputs) check_fed(*state_, *input_info(name), value);
  for (const auto& [name, value] : sequence_inputs) {
    if (!input_info(name)->type().has_sequence_type() || inputs.count(name))
      fail<ValueError>("onnx_io::Model::run", state_->origin, ": input '", name, "' is not a sequence, or fed twice");
  }
  for (const auto& name : input_names())
    if (!inputs.count(name) && !sequence_inputs.count(name))
      fail<ValueError>("onnx_io::Model::run", state_->origin, ": input '", name, "' is not fed");
  // A node that fails half-way leaves the tape as it was: what the run recorded is dropped.
  Tape& tape = Tape::current();
  const std::uint32_t mark = tape.size();
  std::vector<detail::Value> values;
  try {
    detail::Scope scope(nullptr, &options);
    detail::bind_initializers(*state_, graph, scope);
    for (const auto& [name, value] : inputs) scope.bind(name, value);
    for (const auto& [name, value] : sequence_inputs) scope.bind(name, value);
    values = detail::run_nodes(*state_, graph, scope);
  } catch (const std::bad_alloc&) {
    TapeAccess::truncate(tape, mark);
    fail<MemoryError>("onnx_io::Model::run", state_->origin, ": out of memory (std::bad_alloc); the run is rolled back");
  } catch (const std::length_error& e) {  // a container asked for more than it can hold
    TapeAccess::truncate(tape, mark);
    fail<MemoryError>("onnx_io::Model::run", state_->origin, ": a buffer larger than memory can address was asked for (",
                      e.what(), "); the run is rolled back");
  } catch (...) {
    TapeAccess::truncate(tape, mark);
    throw;
  }
  Outputs out;
  for (int i = 0; i < graph.output_size(); ++i) {
    const auto& value = values[static_cast<std::size_t>(i)];
    if (const auto* v = std::get_if<Var>(&value)) out.tensors.emplace(graph.output(i).name(), *v);
    else out.sequences.emplace(graph.output(i).name(), std::get<detail::Sequence>(value));
  }
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
    fail<ValueError>("onnx_io::Model::parameter", state_->origin, ": no initializer '", name, "' (there are: ", known, ")");
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

bool Model::is_sequence(std::string_view name) const {
  const auto& graph = state_->proto.graph();
  for (const auto* values : {&graph.input(), &graph.output()})
    for (const auto& v : *values)
      if (v.name() == name) return v.type().has_sequence_type();
  return false;
}

std::int64_t Model::opset() const { return state_->opset; }

::onnx::ModelProto Model::trained_proto() const {
  ::onnx::ModelProto out = state_->proto;
  // The walk is the loader's read-only one; `out` is this function's own copy to change.
  for_each_graph(out.graph(), [&](const ::onnx::GraphProto& g) {
    for (auto& init : *const_cast<::onnx::GraphProto&>(g).mutable_initializer())
      detail::assign_to_proto(init, parameter(init.name()).value(), state_->origin + ": initializer '" + init.name() + "'");
  });
  try {
    ::onnx::checker::check_model(out);
  } catch (const std::exception& e) {
    fail<ValueError>("onnx_io::save", state_->origin, ": the ONNX checker rejects the trained model: ", e.what());
  }
  return out;
}

void save(const std::filesystem::path& path, const Model& model) {
  const std::string bytes = model.trained_proto().SerializeAsString();
  recur::detail::write_atomically(path, "onnx_io::save",
                                  [&](recur::detail::FileSink& sink) { sink.write(bytes.data(), bytes.size()); });
}

}  // namespace recur::onnx_io
