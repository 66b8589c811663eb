#pragma once
// Scan outputs that the graph reads only at their last iteration run with Keep::last (as
// Theano's scan keeps only the last value of an output nothing reads otherwise): the
// stacked [T, ...] output is never built, and backward does not hold it.
//
// At load, find_last_reads lists, for every Scan (opset >= 9) and Loop node, the scan
// outputs whose every reader is a Gather or Slice node of the same graph taking them as its
// data (not a graph output, not read inside a body graph). When the node runs, the values
// at hand decide (last_read_outputs): every reader must pick exactly the last iteration along
// the output's scan axis (Gather of index -1 or T-1; Slice of [-1:] or [T-1:T], step 1), and
// the output must append (direction 0). Such an output is bound to its last element with
// the scan axis of size 1 (a stand-in the scope marks), and its readers give that element
// (read_last) instead of indexing a stacked tensor: the same values and gradients.
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::onnx_io::detail {

class NodeContext;

using ConstantsByName = std::unordered_map<std::string, Tensor>;

struct LastReads {
  // Per Scan or Loop node: scan output k -> the Gather and Slice nodes that read it (only outputs
  // that nothing else reads are listed).
  std::unordered_map<const ::onnx::NodeProto*, std::unordered_map<std::size_t, std::vector<const ::onnx::NodeProto*>>>
      by_scan_node;
  std::unordered_set<const ::onnx::NodeProto*> readers;
  // Per reader: the int64 Constant nodes' values its inputs name, resolved in the reader's
  // own scope (its graph and the graphs enclosing it). Exporters write an index's Constant
  // just before its reader, after the scan node, so the value is known before it is bound.
  std::unordered_map<const ::onnx::NodeProto*, ConstantsByName> constants;
};

// The scan outputs of every Scan and Loop node in `graph` and its body graphs, at `opset`.
LastReads find_last_reads(const ::onnx::GraphProto& graph, std::int64_t opset);

// What a Scan or Loop node knows of its iterations before it runs: their number exactly
// (Scan), or at most (Loop's M; INT64_MAX without one).
struct Iterations {
  std::optional<std::int64_t> exactly;
  std::int64_t at_most = 0;
};

// Keep::last for the node's scan outputs (of `count`) that only readers of their last
// iteration read; `axes` and `directions` are the outputs' ONNX attributes (empty: 0).
// All Keep::all when the run's options ask for stacked outputs, or no iteration may run.
std::vector<Keep> last_read_outputs(const NodeContext& c, std::size_t count, const std::vector<std::int64_t>& axes,
                                    const std::vector<std::int64_t>& directions, const Iterations& iterations);

// Scan output k's last element as its stand-in: the element with the scan axis (`axis` as
// written) put back at size 1. Marks the node's output `output` as one (NodeContext).
Var last_read_stand_in(const NodeContext& c, std::size_t output, const Var& element, std::int64_t axis);

// What a reader of a stand-in gives: the stand-in itself (Slice, Gather of a 1-element
// index), or without its scan axis `axis` (Gather of a scalar index).
Var read_last(const ::onnx::NodeProto& reader, const Var& stand_in, std::int64_t axis, const Var& gather_indices);

}  // namespace recur::onnx_io::detail
