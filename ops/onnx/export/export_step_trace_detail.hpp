#pragma once
// Internal to recur's ONNX export of a scan (export_scan.cpp): the step function recorded
// once on a tape of its own, with every op it records, by name and input nodes, seen
// through a RecordingScope (autodiff/recording_scope.hpp) - the tape's own hook for
// constructs that watch recording, so the export needs nothing from the tape's internals.
//
// The step runs on stand-ins: its floating states and scan-input elements are variables of
// the example shapes and dtypes, and every floating Shared it reads is a variable of the
// Shared's shape, all holding random values (integer ones, indices, keep their values).
// Each op's parameters (a slice's bounds, a permutation) are read off the op on the tape,
// as it describes itself (autodiff/op_attributes.hpp).
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <recur/autodiff/op_attributes.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/tape.hpp>
#include <recur/ops/scan/onnx.hpp>

namespace recur::onnx_io::detail {

// One op the step recorded: its name, its input nodes in order, its own node, and its
// parameters (nullopt for an op that does not describe them: a user's own op).
struct TracedOp {
  std::string name;
  std::vector<std::uint32_t> inputs;
  std::uint32_t node = 0;
  std::optional<OpAttributes> attributes{};
};

// What a node of the trace is, for the body graph: a body input, a Shared the step reads
// (an initializer of the outer graph), an op, or a constant (every other node, its value
// known: numbers the step made, and ops on constants only, folded).
enum class TracedKind { input, parameter, op, constant };

struct StepTrace {
  std::unique_ptr<Tape> tape;               // holds the nodes' values
  std::vector<std::uint32_t> inputs;        // the states, then one element of each scan input
  std::vector<std::uint32_t> outputs;       // what the step returned, in order
  std::vector<TracedOp> ops;                // the ops that depend on an input or a parameter
  std::map<std::uint32_t, Shared> parameters;  // stand-in node -> the Shared it stands for
  std::map<std::uint32_t, std::size_t> op_of;  // op node -> its index in ops

  TracedKind kind(std::uint32_t node) const;
  const Tensor& value(std::uint32_t node) const;
};

// Runs body once on stand-ins of `input_examples`' shapes and dtypes (values ignored but
// for integer ones),
// twice in fact, with different random values: a step whose ops or constants differ
// between the two (control flow on values, a comparison mask) cannot be one ONNX body, and
// is a ValueError naming `op` and what differed. So are a random draw and an op recorded
// past the scope (a strict scan inside the step checks its own steps' inputs; a scan that
// is not strict is seen op by op, unrolled).
StepTrace trace_step(std::string_view op, const OnnxBody& body, const std::vector<Tensor>& input_examples);

// Equal shapes, dtypes and elements. A NaN equals a NaN only with nan_equal: two traces'
// constants agree where both hold NaN, but no attribute is ever told from NaNs.
bool identical(const Tensor& a, const Tensor& b, bool nan_equal = false);

// "" when two traces record the same ops on the same nodes, else what differs.
std::string op_difference(const StepTrace& a, const StepTrace& b);

}  // namespace recur::onnx_io::detail
