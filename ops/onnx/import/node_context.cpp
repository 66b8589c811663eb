#include <recur/ops/onnx/import/node_context_detail.hpp>

namespace recur::onnx_io::detail {

std::string NodeContext::describe() const {
  return ::recur::detail::concat(model_.origin, ": node '", node_.name(), "' (", node_.op_type(), ", opset ",
                                 model_.opset, ")");
}

bool NodeContext::has_input(std::size_t i) const {
  return i < inputs_.size() && (!std::holds_alternative<Var>(inputs_[i]) || std::get<Var>(inputs_[i]).defined());
}

const Var& NodeContext::tensor_of(const Value& v, const std::string& what) const {
  if (!std::holds_alternative<Var>(v)) invalid(what, " is a sequence, a tensor is expected");
  return std::get<Var>(v);
}

const Var& NodeContext::input(std::size_t i) const {
  if (!has_input(i)) invalid("input ", i, " is required and not given");
  return tensor_of(inputs_[i], "input " + std::to_string(i));
}

const Sequence& NodeContext::sequence_input(std::size_t i) const {
  if (!has_input(i)) invalid("input ", i, " is required and not given");
  if (!std::holds_alternative<Sequence>(inputs_[i])) invalid("input ", i, " is a tensor, a sequence is expected");
  return std::get<Sequence>(inputs_[i]);
}

void NodeContext::check_iteration(std::int64_t i) const {
  const RunOptions& o = run_options();
  if (o.cancel.stop_requested()) throw CancelledError("recur::onnx: " + describe() + ": the run was cancelled (RunOptions::cancel)");
  if (i >= o.max_iterations)
    throw LimitError(::recur::detail::concat("recur::onnx: ", describe(), ": iteration ", i + 1,
                                             " would pass RunOptions::max_iterations = ", o.max_iterations,
                                             " (raise it for a model you trust)"));
}

std::vector<Var> NodeContext::tensor_inputs(std::size_t first) const {
  std::vector<Var> out;
  for (std::size_t i = first; i < inputs_.size(); ++i) out.push_back(input(i));
  return out;
}

std::vector<Var> NodeContext::run_tensor_body(const ::onnx::GraphProto& body, std::span<const Var> inputs) const {
  const std::vector<Value> args(inputs.begin(), inputs.end());
  std::vector<Var> out;
  for (const auto& v : run_body(body, args)) out.push_back(tensor_of(v, "an output of body '" + body.name() + "'"));
  return out;
}

std::vector<std::int64_t> NodeContext::ints_input(std::size_t i) const {
  const Tensor& t = input(i).value();
  if (t.dtype() != DType::int64) invalid("input ", i, " must be integers, got ", t.dtype());
  const std::int64_t* p = t.data<std::int64_t>();
  return std::vector<std::int64_t>(p, p + t.numel());
}

const ::onnx::AttributeProto* NodeContext::attribute(const std::string& name) const {
  for (const auto& a : node_.attribute())
    if (a.name() == name) return &a;
  return nullptr;
}

std::int64_t NodeContext::int_attr(const std::string& name, std::int64_t fallback) const {
  const auto* a = attribute(name);
  return a ? a->i() : fallback;
}

float NodeContext::float_attr(const std::string& name, float fallback) const {
  const auto* a = attribute(name);
  return a ? a->f() : fallback;
}

std::string NodeContext::string_attr(const std::string& name, const std::string& fallback) const {
  const auto* a = attribute(name);
  return a ? a->s() : fallback;
}

std::optional<std::vector<std::int64_t>> NodeContext::ints_attr(const std::string& name) const {
  const auto* a = attribute(name);
  if (!a) return std::nullopt;
  return std::vector<std::int64_t>(a->ints().begin(), a->ints().end());
}

std::int64_t NodeContext::required_int_attr(const std::string& name) const {
  const auto* a = attribute(name);
  if (!a) invalid("attribute '", name, "' is required");
  return a->i();
}

const ::onnx::GraphProto& NodeContext::graph_attr(const std::string& name) const {
  const auto* a = attribute(name);
  if (!a || !a->has_g()) invalid("graph attribute '", name, "' is required");
  return a->g();
}

}  // namespace recur::onnx_io::detail
