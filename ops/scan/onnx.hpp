#pragma once
// ONNX's face of scan: the Scan operator (opset 9 and later; version 8's batched form is the
// same call with the time axis given as 1), and the Loop operator (onnx_loop, below).
//
//   auto [final_states, scan_outputs] = onnx_scan(body, initial_states, scan_inputs, {...});
//
// The face is two functions, onnx_scan and onnx_loop, not a namespace: a namespace
// recur::onnx would collide with the ONNX library's own global namespace onnx under
// `using namespace recur;`. Its argument types are OnnxScanOptions, OnnxBody and
// OnnxScanResult (OnnxLoopOptions, OnnxLoopResult).
//
// body receives the N states followed by one element of each of the M scan inputs, and
// returns the N new states followed by K scan output elements. Every scan input must have
// the same length along its axis (ValueError naming the inputs and their shapes otherwise);
// states must keep their shape and dtype, and so must each scan output element (ShapeError).
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <vector>

#include <recur/ops/scan/types.hpp>

namespace recur {

// Every member has a default (`{}` at least): designated initializers may leave any out
// without GCC's -Wmissing-field-initializers.
struct OnnxScanOptions {
  // Per scan input, the axis iterated over; negative counts from the back. Empty: all 0.
  std::vector<std::int64_t> scan_input_axes{};
  // Per scan input: 0 forward, 1 reverse (from the last element to the first). Empty: all 0.
  std::vector<std::int64_t> scan_input_directions{};
  // Per scan output, the axis its elements are stacked along; negative counts from the back
  // of the stacked output (rank of an element + 1). Empty: all 0.
  std::vector<std::int64_t> scan_output_axes{};
  // Per scan output: 0 appends each element, 1 prepends it (the output is in reverse order
  // of iteration). Empty: all 0.
  std::vector<std::int64_t> scan_output_directions{};
  // Not in ONNX; as in every face of recur's scan.
  std::int64_t truncate_gradient = -1;  // k >= 0: backpropagate through the last k steps only
  Checkpoint checkpoint{};              // recompute instead of keeping every step
  std::optional<Capture> capture{};     // record the body once, replay it (types.hpp); unset: the default
};

using OnnxBody = std::function<std::vector<Var>(std::span<const Var>)>;

struct OnnxScanResult {
  std::vector<Var> final_states;
  std::vector<Var> scan_outputs;
};

// ONNX's Loop operator on the same engine:
//
//   auto [final_states, scan_outputs, iterations] = onnx_loop(body, initial_states, {.max_trip_count = 10});
//
// body receives the iteration number (an int64 0-d constant, from 0), the condition (int64
// 1: the loop runs only while it holds) and the N states; it returns the new condition (one
// element of any dtype; zero stops the loop after this iteration: the engine's `until`), the
// N new states and K scan output elements, each stacked along a new axis 0. The loop runs
// while the iteration number is below max_trip_count (absent: no bound) and the condition
// holds; `cond` false runs no iteration (the body is then called once, nothing of it kept,
// to learn the scan outputs' shapes). States must keep their shape and dtype, and so must
// each scan output element (ShapeError naming it). Truncation and recomputation work as in
// every face; the recomputing policies that plan for the number of steps (auto_sqrt,
// snapshots, budget) need max_trip_count (ValueError otherwise), every_k does not.
struct OnnxLoopOptions {
  std::optional<std::int64_t> max_trip_count{};  // ONNX's M (>= 0); absent: until the condition fails
  bool cond = true;                               // ONNX's initial cond (absent in ONNX: true)
  std::int64_t truncate_gradient = -1;           // k >= 0: backpropagate through the last k iterations
  Checkpoint checkpoint{};                        // recompute instead of keeping every iteration
  std::optional<Capture> capture{};               // record the body once, replay it (types.hpp)
};

struct OnnxLoopResult {
  std::vector<Var> final_states;
  std::vector<Var> scan_outputs;
  std::int64_t iterations = 0;
};

OnnxLoopResult onnx_loop(const OnnxBody& body, const std::vector<Var>& initial_states,
                         const OnnxLoopOptions& options = {});

OnnxScanResult onnx_scan(const OnnxBody& body, const std::vector<Var>& initial_states,
                         const std::vector<Var>& scan_inputs, const OnnxScanOptions& options = {});

}  // namespace recur
