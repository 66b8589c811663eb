#pragma once
// The one scan engine behind every face. A face translates its arguments into a
// ScanProgram and its results back; the engine runs the loop on the tape, one iteration
// after another, each recorded with its node range so that truncation, recomputation and
// memory accounting work per iteration.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <recur/ops/scan/types.hpp>

namespace recur::scan_engine {

struct SequenceSpec {
  Var data;
  std::vector<std::int64_t> taps{0};
  std::int64_t axis = 0;  // the time axis
  bool reverse = false;   // iterate from the end of the sequence
};

struct OutputSpec {
  Var initial;                          // undefined: an output that is not fed back
  std::vector<std::int64_t> taps{-1};   // past taps fed to the step (negative)
  bool initial_has_tap_axis = false;    // initial[0] is output[-k_max] (several taps)
  Keep keep = Keep::all;
  bool reverse_stack = false;           // stack the outputs last step first
  std::int64_t stack_axis = 0;          // where the time axis of the stacked output goes
};

// How the number of steps follows from the sequences' lengths. The engine is the one place
// that checks them, in the face's own words (ScanProgram's *_name fields).
enum class Lengths {
  shortest,  // Theano: lengths may differ; the shortest bounds n_steps, which may be negative
  equal,     // JAX, ONNX: every sequence has one length; n_steps, if given, is that and >= 0
};

struct ScanProgram {
  std::string_view face = "scan";  // names the entry point the user called in error messages
  std::vector<SequenceSpec> sequences;
  std::vector<OutputSpec> outputs;
  std::vector<Var> non_sequences;
  std::optional<std::int64_t> n_steps;  // with sequences: at most (or exactly) their length
  Lengths lengths = Lengths::shortest;
  bool backwards = false;               // iterate every sequence from its end
  std::int64_t truncate_gradient = -1;  // -1: full BPTT; k >= 0: the last k steps; else ValueError
  bool strict = false;
  Checkpoint checkpoint;
  std::optional<Capture> capture;       // unset: default_capture()
  SequenceLengths batch_lengths;        // per batch element (lengths_mask_detail.hpp)
  // When true, outputs the step returns beyond `outputs` are added after the first step,
  // not fed back, shaped like `extra_outputs` (Theano's outputs_info=None, JAX's ys).
  // With zero steps the step is called once on zeros shaped like the sequence elements
  // (nothing recorded, its nodes dropped) to learn their shapes.
  bool infer_extra_outputs = false;
  OutputSpec extra_outputs;
  // The i-th inferred output follows extra_output_specs[i] when there is one, else
  // extra_outputs (ONNX gives every scan output its own axis and direction).
  std::vector<OutputSpec> extra_output_specs;
  // How error messages name output j in the face's own terms ("carry[1]"); unset: "output j".
  std::function<std::string(std::size_t)> output_name;
  // Likewise sequence i ("xs[0]", "scan_inputs[1]"); unset: "sequence i". The sequences
  // together and n_steps, in the face's words ("xs leaves", "length").
  std::function<std::string(std::size_t)> sequence_name;
  std::string_view sequences_name = "sequences";
  std::string_view n_steps_name = "n_steps";
};

struct ScanRun {
  std::vector<Var> outputs;  // stacked (Keep::all) or last value (Keep::last), per output
  Updates updates;
  std::int64_t steps = 0;    // iterations actually run
  StepCapture capture;       // whether the steps were captured, and if not, why
};

ScanRun run(const StepFn& step, const ScanProgram& program);

// Appends one output per initial value, fed back and kept only at its last value (JAX's
// carry, ONNX's states).
void add_carried_outputs(ScanProgram& program, const std::vector<Var>& initial);
// The run's first n outputs and the rest (a face's carried outputs and its stacked ones).
std::pair<std::vector<Var>, std::vector<Var>> split_outputs(const ScanRun& run, std::size_t n);

}  // namespace recur::scan_engine
