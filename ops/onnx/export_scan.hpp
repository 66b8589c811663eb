#pragma once
// ONNX export of a scan: the step function of onnx_scan (ONNX's face of scan,
// ops/scan/onnx.hpp) written as an ONNX model of opset 16 with one Scan node, whose body
// graph is the ops the step records (a cell's fused op, nn::LSTMCell's, as the ops of its
// equations).
//
//   OnnxBody step = [&](std::span<const Var> s) -> std::vector<Var> {
//     Var h = tanh(matmul(s[1], W) + matmul(s[0], U) + b);   // s[0] the state, s[1] x_t
//     return {h, h};                                          // new state, scan output
//   };
//   recur::onnx_io::save("elman.onnx", step, {h0}, {xs});
//
// The step is run once (twice: see below) on stand-ins of the examples' shapes and dtypes
// (random values; integer states and scan inputs, token ids, keep the examples' values),
// on a tape of its own, and each op it records becomes ONNX nodes (export_step_ops.cpp:
// arithmetic, Tanh/Sigmoid/Relu/Exp/Log/..., MatMul, Reshape, Transpose, Slice, Gather,
// Concat, Reduce*, Softmax, Where, Expand). The Shared variables it reads become
// initializers of the outer graph (named as the Shared, their current values) read by the
// body; constants it makes become Constant nodes of the body. The graph:
//   inputs   the initial states (the examples' shapes) and the scan inputs (the examples'
//            shapes with the scan axis symbolic, "T")
//   Scan     num_scan_inputs, scan_input_axes/directions, scan_output_axes/directions as
//            in the options (truncate_gradient and checkpoint have no ONNX form: ignored)
//   outputs  the final states, then the scan outputs stacked along their axis ("T")
//
// What cannot be one ONNX body is an error naming the op, and nothing is written: an op
// with no ONNX form here (onnx_io::UnsupportedError, e.g. a fused cell op; write the step
// with plain ops), an op recorded out of sight (a strict scan inside the step; one that is
// not strict is unrolled into the body), a random draw, control flow on values or a value
// computed without gradient (a comparison mask): the step is traced twice on different
// random values and must record the same ops and constants.
// With options.batch_axis the batch is symbolic too: the step is traced once more at
// another batch size, which tells the sizes that scale with the batch.
// Every model passes onnx::checker::check_model and ONNX's strict shape inference.
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/ops/scan/onnx.hpp>

namespace recur::onnx_io {

// Every member has a default: designated initializers may leave any out.
struct ScanExportOptions {
  OnnxScanOptions scan{};  // the axes and directions, as given to onnx_scan
  // Names of the graph's inputs and outputs; empty: initial_state_i, scan_input_j,
  // final_state_i, scan_output_k.
  std::vector<std::string> state_names{};
  std::vector<std::string> scan_input_names{};
  std::vector<std::string> final_state_names{};
  std::vector<std::string> scan_output_names{};
  std::string graph_name = "recur_scan";
  // A batch of any size: the axis that is the batch in every state and every scan input's
  // step element (its scan axis taken out: 0 for states [B, H] and x_t [B, I] of a
  // sequence [T, B, I] or [B, T, I]), all of one size. It is the dimension `batch_name` of
  // the graph's and the body's inputs and outputs, and the shapes the step's ops were traced
  // with (reshape, broadcast_to, constants of the batch's size) are computed in the body
  // from the batch it runs at; an op that cannot be is a ValueError naming it. Unset: every
  // size but T is the example's.
  std::optional<std::int64_t> batch_axis{};
  std::string batch_name = "batch";
};

// The checked model of a scan of `body` over states like `initial_states` and scan inputs
// like `scan_inputs` (only their shapes and dtypes are used).
::onnx::ModelProto scan_model(const OnnxBody& body, const std::vector<Tensor>& initial_states,
                              const std::vector<Tensor>& scan_inputs, const ScanExportOptions& options = {});

// scan_model(...) written to `path`, atomically (IOError naming the path).
void save(const std::filesystem::path& path, const OnnxBody& body, const std::vector<Tensor>& initial_states,
          const std::vector<Tensor>& scan_inputs, const ScanExportOptions& options = {});

}  // namespace recur::onnx_io
