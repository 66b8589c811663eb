#pragma once
// Internal to recur's ONNX export of a scan: one traced op while the body nodes that compute
// it are added (export_step_ops.cpp, and export_step_cells.cpp for the cells' fused ops),
// with the search that finds an attribute the tape does not keep.
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/core/error.hpp>
#include <recur/ops/onnx/export_graph_detail.hpp>
#include <recur/ops/onnx/export_step_ops_detail.hpp>

namespace recur::onnx::detail {

using Ints = std::vector<std::int64_t>;

// One traced op while its nodes are added. Its values are the graph's trace's, or while
// find() checks a candidate on the batch trace, that one's.
struct OpView {
  StepGraph& graph;
  const TracedOp& op;
  mutable const StepTrace* values = nullptr;

  const StepTrace& trace() const { return values ? *values : graph.trace; }
  const Tensor& x(std::size_t i) const { return trace().value(op.inputs[i]); }
  const Tensor& y() const { return trace().value(op.node); }
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

  // The first candidate attribute value with which recur's op, `apply(candidate)`, gives
  // the recorded output (on random inputs, the only one), in every trace: with a symbolic
  // batch, one that fits the traced batch size only depends on it, which the body cannot.
  template <class C, class F>
  C find(std::string_view what, const std::vector<C>& candidates, F apply) const {
    bool fits_one = false;
    for (const C& c : candidates) {
      bool fits_all = true;
      for (const StepTrace* t : graph.traces()) {
        values = t;
        try {
          fits_all = fits_all && identical(apply(c), y());
        } catch (const Error&) {
          fits_all = false;  // a candidate the op rejects for these shapes is not the one
        }
        fits_one = fits_one || (fits_all && t == &graph.trace);
        if (!fits_all) break;
      }
      values = nullptr;
      if (fits_all) return c;
    }
    std::string shapes;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) shapes += (i ? ", " : "") + to_string(x(i).shape());
    if (fits_one)
      fail<ValueError>(graph.op, "the ", what, " of op '", op.name, "' (node ", op.node, ", inputs of shapes ", shapes,
                       ") depend on the batch size: it cannot run at another batch size (option 'batch_axis')");
    fail<ValueError>(graph.op, "cannot tell the ", what, " of op '", op.name, "' (node ", op.node,
                     ") from its inputs of shapes ", shapes, " and output of shape ", to_string(y().shape()));
  }

  // The op's output shape as a body value (batch sizes computed: StepGraph::shape_of).
  std::string out_shape() const { return graph.shape_of(op.node, op.name, out() + "_shape"); }
};

using Emit = std::function<void(const OpView&)>;
using Emitters = std::map<std::string, Emit, std::less<>>;  // by recur op name

// The cells' fused elementwise ops (rnn_pointwise, lstm_pointwise, gru_pointwise) as the
// ONNX ops of their equations (export_step_cells.cpp).
void add_cell_emitters(Emitters& table);

}  // namespace recur::onnx::detail
