#pragma once
// Internal to recur's ONNX export of a scan: one traced op while the body nodes that compute
// it are added (export_step_ops.cpp, and export_step_cells.cpp for the cells' fused ops),
// its parameters read off the op's description on the tape.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/core/error.hpp>
#include <recur/core/shape.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_step_ops_detail.hpp>

namespace recur::onnx_io::detail {

using Ints = std::vector<std::int64_t>;

// One traced op while its nodes are added; its values are the graph's trace's.
struct OpView {
  StepGraph& graph;
  const TracedOp& op;

  const Tensor& x(std::size_t i) const { return graph.trace.value(op.inputs[i]); }
  const Tensor& y() const { return graph.trace.value(op.node); }
  std::int64_t rank() const { return x(0).rank(); }
  std::string in(std::size_t i) const { return graph.name_of(op.inputs[i]); }
  std::vector<std::string> all_inputs() const {
    std::vector<std::string> names;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) names.push_back(in(i));
    return names;
  }
  const std::string& out() const { return graph.value_names.at(op.node); }
  std::string temp(const std::string& hint) const { return graph.names.unique(out() + "_" + hint); }

  // A node of ONNX type `type` writing `output` (the op's own output by default).
  ::onnx::NodeProto& node(const std::string& type, const std::vector<std::string>& inputs,
                          const std::string& output = "") const {
    const std::string o = output.empty() ? out() : output;
    return add_node(graph.body, type, inputs, {o}, graph.names.unique("node_" + o));
  }
  // A node of ONNX type `type` writing a new value named after `hint`; returns its name.
  std::string step(const std::string& type, const std::vector<std::string>& inputs, const std::string& hint) const {
    std::string o = temp(hint);
    node(type, inputs, o);
    return o;
  }
  std::string ints(const Ints& values, const std::string& hint) const { return graph.ints(values, out() + "_" + hint); }

  // The op's parameter `name` as it described itself on the tape (autodiff/op_attributes.hpp).
  // With a symbolic batch it must be the same in the batch trace: a parameter that changes
  // with the batch size cannot be a fixed attribute of the body (ValueError).
  template <class T>
  const T& attribute(std::string_view name) const {
    const T& value = attributes_in(graph.trace).get<T>(op.name, name);
    for (const StepTrace* t : graph.traces())
      if (attributes_in(*t).get<T>(op.name, name) != value)
        fail<ValueError>(graph.op, "attribute '", name, "' of op '", op.name, "' (node ", op.node, ") is not the same "
                         "at another batch size: its parameters depend on the batch size, so it cannot run at "
                         "another batch size (option 'batch_axis')");
    return value;
  }
  const OpAttributes& attributes_in(const StepTrace& t) const {
    const TracedOp& traced = t.ops.at(t.op_of.at(op.node));
    if (!traced.attributes)
      fail<ValueError>(graph.op, "op '", op.name, "' (node ", op.node, ") does not describe its parameters");
    return *traced.attributes;
  }
  // Attribute `name`, an axis of input 0, normalized (recur's ops take negative axes).
  std::int64_t axis(std::string_view name = "axis") const {
    return normalize_axis(op.name, attribute<std::int64_t>(name), x(0).shape());
  }

  // The op's output shape as a body value (batch sizes computed: StepGraph::shape_of).
  std::string out_shape() const { return graph.shape_of(op.node, op.name, out() + "_shape"); }
};

using Emit = std::function<void(const OpView&)>;
using Emitters = std::map<std::string, Emit, std::less<>>;  // by recur op name

// The cells' fused elementwise ops (rnn_pointwise, lstm_pointwise, gru_pointwise) as the
// ONNX ops of their equations (export_step_cells.cpp).
void add_cell_emitters(Emitters& table);

}  // namespace recur::onnx_io::detail
