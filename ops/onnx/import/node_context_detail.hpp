#pragma once
// What an op's import sees of one node: its inputs as Vars, its attributes, the opset, and
// how to run a body graph. Its errors name the node, its op type and the opset.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/autodiff/var.hpp>
#include <recur/core/error.hpp>
#include <recur/ops/onnx/error.hpp>
#include <recur/ops/onnx/import/graph_detail.hpp>

namespace recur::onnx_io::detail {

class NodeContext {
 public:
  NodeContext(const ModelState& model, const ::onnx::NodeProto& node, std::vector<Value> inputs, const Scope& scope)
      : model_(model), node_(node), inputs_(std::move(inputs)), scope_(scope) {}

  const ::onnx::NodeProto& node() const { return node_; }
  // The run's options for Scan and Loop (model.hpp).
  const RunOptions& run_options() const { return scope_.options(); }
  std::int64_t opset() const { return model_.opset; }
  // The value `name` is bound to now, in this node's scope or an outer one (nullptr: none).
  const Value* find_value(const std::string& name) const { return scope_.find(name); }
  // The scan outputs the model reads only at their last iteration, and the outputs of this
  // node that stand in for one (last_reads_detail.hpp): output index, scan axis.
  const LastReads& last_reads() const { return model_.last_reads; }
  void mark_last_only(std::size_t output, std::int64_t axis) const { last_only_.emplace_back(output, axis); }
  const std::vector<std::pair<std::size_t, std::int64_t>>& last_only_outputs() const { return last_only_; }
  std::size_t output_count() const { return static_cast<std::size_t>(node_.output_size()); }

  // Inputs: `has_input` is false for an omitted optional input (empty name, or past the end).
  std::size_t input_count() const { return inputs_.size(); }
  bool has_input(std::size_t i) const;
  // A tensor input (ValueError if it is a sequence), a sequence input (ValueError if a tensor).
  const Var& input(std::size_t i) const;
  const Sequence& sequence_input(std::size_t i) const;
  // Every input from `first` on as tensors, or as Values.
  std::vector<Var> tensor_inputs(std::size_t first = 0) const;
  std::span<const Value> values() const { return inputs_; }
  // An int64 input read as integers (axes, shapes, starts): ValueError if not int64.
  std::vector<std::int64_t> ints_input(std::size_t i) const;

  // Attributes: the value, or `fallback` when the node has none.
  const ::onnx::AttributeProto* attribute(const std::string& name) const;
  std::int64_t int_attr(const std::string& name, std::int64_t fallback) const;
  float float_attr(const std::string& name, float fallback) const;
  std::string string_attr(const std::string& name, const std::string& fallback) const;
  std::optional<std::vector<std::int64_t>> ints_attr(const std::string& name) const;
  std::int64_t required_int_attr(const std::string& name) const;
  const ::onnx::GraphProto& graph_attr(const std::string& name) const;

  // Runs a body graph of this node inside the node's scope.
  std::vector<Value> run_body(const ::onnx::GraphProto& body, std::span<const Value> inputs) const {
    return run_graph(model_, body, inputs, &scope_);
  }
  // The same for a body that takes and gives tensors only (Scan's).
  std::vector<Var> run_tensor_body(const ::onnx::GraphProto& body, std::span<const Var> inputs) const;
  // A value that must be a tensor (ValueError naming `what` otherwise).
  const Var& tensor_of(const Value& v, const std::string& what) const;

  // The run's bounds for Loop and Scan (RunOptions::max_iterations, cancel): LimitError when
  // iteration `i` (from 0) would pass max_iterations, CancelledError when the run was
  // cancelled. Called as an iteration begins, or with the last iteration's number before a
  // run whose count is known.
  void check_iteration(std::int64_t i) const;

  // "node 'name' (OpType, opset N)", how messages name the node.
  std::string describe() const;
  template <class... Parts>
  [[noreturn]] void unsupported(const Parts&... parts) const {
    throw UnsupportedError(::recur::detail::concat("recur::onnx: ", describe(), ": ", parts...));
  }
  template <class... Parts>
  [[noreturn]] void invalid(const Parts&... parts) const {
    throw ValueError(::recur::detail::concat("recur::onnx: ", describe(), ": ", parts...));
  }

 private:
  const ModelState& model_;
  const ::onnx::NodeProto& node_;
  std::vector<Value> inputs_;
  const Scope& scope_;
  mutable std::vector<std::pair<std::size_t, std::int64_t>> last_only_;  // what the import marked
};

}  // namespace recur::onnx_io::detail
