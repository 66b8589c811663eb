// A symbolic batch in the body of an exported scan (export_step_ops_detail.hpp): which
// sizes scale with the batch, shapes computed from the batch size the body runs at, and
// constants of the batch's size.
#include <algorithm>

#include <recur/core/error.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_step_ops_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

// The body's [batch] int64 value, read off the batch source's shape on first use.
const std::string& batch_size(StepGraph& graph) {
  BatchTrace& b = *graph.batch;
  if (b.batch_name.empty()) {
    b.batch_name = graph.names.unique("batch_size");
    ::onnx::NodeProto& n = add_node(graph.body, "Shape", {b.source}, {b.batch_name},
                                    graph.names.unique("node_" + b.batch_name));
    set_attribute(n, "start", b.axis);
    set_attribute(n, "end", b.axis + 1);
  }
  return b.batch_name;
}

}  // namespace

std::vector<std::int64_t> batch_factors(const StepTrace& trace, const BatchTrace* batch, std::uint32_t node) {
  const Shape& at = trace.value(node).shape();
  std::vector<std::int64_t> factors(at.size(), 0);
  if (!batch) return factors;
  const Shape& next = batch->trace.value(node).shape();  // at one more batch element
  for (std::size_t k = 0; k < at.size(); ++k) {
    const std::int64_t step = k < next.size() ? next[k] - at[k] : -1;
    if (next.size() != at.size()) factors[k] = -1;
    else if (step != 0) factors[k] = step > 0 && at[k] == step * batch->size ? step : -1;
  }
  return factors;
}

std::vector<const StepTrace*> StepGraph::traces() const {
  if (!batch) return {&trace};
  return {&trace, &batch->trace};
}

std::string StepGraph::shape_of(std::uint32_t node, const std::string& user, const std::string& hint) {
  const Shape& shape = trace.value(node).shape();
  const std::vector<std::int64_t> factors = batch_factors(trace, batch, node);
  if (std::all_of(factors.begin(), factors.end(), [](std::int64_t k) { return k == 0; }))
    return ints(std::vector<std::int64_t>(shape.begin(), shape.end()), hint);
  // Runs of fixed sizes as constants, each batch-scaled size the batch size times its factor.
  std::vector<std::string> parts;
  std::vector<std::int64_t> fixed;
  auto flush = [&] {
    if (!fixed.empty()) parts.push_back(ints(fixed, hint + "_fixed"));
    fixed.clear();
  };
  for (std::size_t k = 0; k < shape.size(); ++k) {
    if (factors[k] == 0) {
      fixed.push_back(shape[k]);
      continue;
    }
    if (factors[k] < 0)
      fail<ValueError>(op, "op '", user, "' (node ", node, ") has shape ", to_string(shape), " at batch size ",
                       batch->size, " and ", to_string(batch->trace.value(node).shape()), " at ", batch->size + 1,
                       ": a size that changes with the batch but is no multiple of it, so the step cannot run at "
                       "another batch size (option 'batch_axis')");
    flush();
    parts.push_back(factors[k] == 1 ? batch_size(*this) : names.unique(hint + "_scaled"));
    if (factors[k] != 1)
      add_node(body, "Mul", {batch_size(*this), ints({factors[k]}, hint + "_factor")}, {parts.back()},
               names.unique("node_" + parts.back()));
  }
  flush();
  if (parts.size() == 1) return parts[0];
  const std::string name = names.unique(hint);
  set_attribute(add_node(body, "Concat", parts, {name}, names.unique("node_" + name)), "axis", std::int64_t{0});
  return name;
}

// A constant the same at both batch sizes is a Constant; one of the batch's size that does
// not change along the batch is its first slice, expanded to the batch the body runs at.
std::string StepGraph::constant_of(std::uint32_t node) {
  const Tensor& value = trace.value(node);
  if (!batch || identical(value, batch->trace.value(node))) return constant(value, "const");
  const Tensor& other = batch->trace.value(node);
  const std::vector<std::int64_t> factors = batch_factors(trace, batch, node);
  const bool scaled_once = std::all_of(factors.begin(), factors.end(), [](std::int64_t k) { return k == 0 || k == 1; });
  Tensor slab = value, other_slab = other;
  for (std::size_t k = 0; scaled_once && k < factors.size(); ++k) {
    if (factors[k] == 0) continue;
    slab = slice(slab, static_cast<std::int64_t>(k), 0, 1);
    other_slab = slice(other_slab, static_cast<std::int64_t>(k), 0, 1);
  }
  if (!scaled_once || !identical(slab, other_slab) || !identical(broadcast_to(slab, value.shape()), value) ||
      !identical(broadcast_to(slab, other.shape()), other))
    fail<ValueError>(op, "node ", node, " of the step is a constant of shape ", to_string(value.shape()),
                     " whose value depends on the batch size (a mean over the batch, a batch index?): the step "
                     "cannot run at another batch size (option 'batch_axis')");
  const std::string name = names.unique("const_batch");
  add_node(body, "Expand", {constant(slab, "const_slab"), shape_of(node, "constant", name + "_shape")}, {name},
           names.unique("node_" + name));
  return name;
}

}  // namespace recur::onnx_io::detail
