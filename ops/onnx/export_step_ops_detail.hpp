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

#include <recur/ops/onnx/export_step_trace_detail.hpp>

namespace recur::onnx::detail {

// The names of a model's values (inputs, outputs, initializers, every node's output, in
// the outer graph and the body alike): ONNX wants each given once.
class Names {
 public:
  // `hint` if free, else hint_2, hint_3, ...; the name is taken.
  std::string unique(const std::string& hint);

 private:
  std::set<std::string> used_;
};

// The body graph under construction: which name holds each traced node's value.
struct StepGraph {
  const StepTrace& trace;
  ::onnx::GraphProto& body;
  Names& names;
  std::string_view op;                                // "onnx::save", for messages
  std::map<std::uint32_t, std::string> value_names{};  // inputs and parameters set by the caller

  // The name of `node`'s value; a constant becomes a Constant node of the body on first use.
  const std::string& name_of(std::uint32_t node);
  // A Constant node holding `value`; returns its output's name.
  std::string constant(const Tensor& value, const std::string& hint);
};

// Adds the body nodes that compute traced op `op` (its output named in value_names).
// UnsupportedError naming the op when it has no ONNX form; ValueError when its attributes
// cannot be told from its recorded inputs and output.
void add_op(StepGraph& graph, const TracedOp& op);

// The recur ops add_op maps, by name.
std::vector<std::string_view> exportable_ops();

}  // namespace recur::onnx::detail
