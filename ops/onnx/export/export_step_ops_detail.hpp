#pragma once
// Internal to recur's ONNX export of a scan (export_scan.cpp): the body graph built from a
// traced step (export_step_trace_detail.hpp), one recorded recur op at a time.
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/ops/onnx/export/export_step_trace_detail.hpp>

namespace recur::onnx_io::detail {

// The names of a model's values (inputs, outputs, initializers, every node's output, in
// the outer graph and the body alike): ONNX wants each given once.
class Names {
 public:
  // `hint` if free, else hint_2, hint_3, ...; the name is taken.
  std::string unique(const std::string& hint);

 private:
  std::set<std::string> used_;
};

// A symbolic batch (ScanExportOptions::batch_axis): the step traced a second time at
// another batch size, the same ops recorded, tells which dimension of each node's value
// scales with the batch. The body then computes every shape an op was traced with from the
// batch size it runs at, read off body input `source` (axis `axis`).
struct BatchTrace {
  const StepTrace& trace;  // at batch size `size` + 1
  std::int64_t size = 0;   // the batch size of the graph's trace
  std::string source;      // a body input with the batch along `axis`
  std::int64_t axis = 0;
  std::string batch_name{};  // the body's [batch] value, made on first use
};

// The body graph under construction: which name holds each traced node's value.
struct StepGraph {
  const StepTrace& trace;
  ::onnx::GraphProto& body;
  Names& names;
  std::string_view op;                                // "onnx_io::save", for messages
  std::map<std::uint32_t, std::string> value_names{};  // inputs and parameters set by the caller
  BatchTrace* batch = nullptr;                         // a symbolic batch, or null: every size fixed

  // The name of `node`'s value; a constant becomes a Constant node of the body on first use
  // (with a symbolic batch, one of the batch's size is its slice expanded, or a ValueError).
  const std::string& name_of(std::uint32_t node);
  // A Constant node holding `value`; returns its output's name.
  std::string constant(const Tensor& value, const std::string& hint);
  // A Constant node holding the int64 vector `values` (a shape, axes, sizes).
  std::string ints(const std::vector<std::int64_t>& values, const std::string& hint);
  // The body value of constant node `node` (what name_of adds on first use).
  std::string constant_of(std::uint32_t node);
  // The traces `node`'s value is in: this one, and the batch trace when there is one.
  std::vector<const StepTrace*> traces() const;
  // An int64 [rank] value of the body holding `node`'s shape: a Constant, or with a
  // symbolic batch the traced shape with each batch-scaled size computed from the batch
  // size (ValueError naming `user`, the op needing it, when a size is not a multiple of it).
  std::string shape_of(std::uint32_t node, const std::string& user, const std::string& hint);
};

// Per dimension of `node`'s value: 0 fixed, k > 0 k times the batch size, -1 changing with
// the batch size but not in proportion. All 0 without a symbolic batch (null).
std::vector<std::int64_t> batch_factors(const StepTrace& trace, const BatchTrace* batch, std::uint32_t node);

// Adds the body nodes that compute traced op `op` (its output named in value_names).
// UnsupportedError naming the op when it has no ONNX form; ValueError when its attributes
// cannot be told from its recorded inputs and output.
void add_op(StepGraph& graph, const TracedOp& op);

// The recur ops add_op maps, by name.
std::vector<std::string_view> exportable_ops();

}  // namespace recur::onnx_io::detail
