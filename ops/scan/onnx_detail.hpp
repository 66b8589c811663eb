#pragma once
// ONNX's face with a Keep per scan output, for the ONNX importer (ops/onnx/): a scan output
// that the imported graph reads only at its last iteration runs with Keep::last (the
// engine returns that one element, not the stacked outputs). keep[k] applies to scan
// output k; those past keep's end are Keep::all. A Keep::last output is its element (no
// stacking axis), undefined when no iteration ran.
#include <span>

#include <recur/ops/scan/onnx.hpp>

namespace recur::detail {

OnnxScanResult onnx_scan_keeping(const OnnxBody& body, const std::vector<Var>& initial_states,
                                 const std::vector<Var>& scan_inputs, const OnnxScanOptions& options,
                                 std::span<const Keep> keep);
OnnxLoopResult onnx_loop_keeping(const OnnxBody& body, const std::vector<Var>& initial_states,
                                 const OnnxLoopOptions& options, std::span<const Keep> keep);

}  // namespace recur::detail
