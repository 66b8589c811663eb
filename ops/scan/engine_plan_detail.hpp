#pragma once
// Internal to the scan engine (engine.cpp): a ScanProgram checked and planned before the
// loop runs: its options, where each sequence's taps put iteration 0, how many iterations
// run (the one place that checks the sequences' lengths), and each output's rule.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <recur/autodiff/tape.hpp>
#include <recur/ops/scan/engine.hpp>

namespace recur::scan_engine::detail {

// Output j and sequence i as the face calls them.
std::string output_name(const ScanProgram& p, std::size_t j);
std::string sequence_name(const ScanProgram& p, std::size_t i);

// Options that do not depend on the sequences (ValueError naming the face).
void check_options(const ScanProgram& p);

// How many past values of a fed-back output its taps read.
std::int64_t max_lag(const OutputSpec& o);

// Where a sequence's taps put iteration 0: Theano pretends tap 0 is always present, so a
// sequence with taps [-4, 0] starts at its 5th element and one with [2] at its 1st.
struct SequencePlan {
  const SequenceSpec* spec;
  std::int64_t axis;
  std::int64_t first;  // element of tap 0 at iteration 0 (= -min(taps, 0))
  std::int64_t steps;  // iterations the sequence can feed
};

struct OutputPlan {
  const OutputSpec* spec;
  bool fed_back;                   // has an initial state and taps
  std::vector<Var> history;        // initial entries, then one value per iteration
  std::optional<Shape> shape;      // every step must produce this shape...
  DType dtype = DType::float32;    // ...and dtype
  std::vector<Var> values;         // Keep::all
  std::vector<Tensor> plain;       // Keep::all without a gradient (NoGrad runs)
};

// The tape the program's Vars live on (the current tape when it has none).
Tape& tape_of(const ScanProgram& p);
std::vector<SequencePlan> plan_sequences(const ScanProgram& p);
std::vector<OutputPlan> plan_outputs(const ScanProgram& p);
// The number of iterations, checked against the sequences' lengths and n_steps.
std::int64_t count_steps(const ScanProgram& p, const std::vector<SequencePlan>& seqs);

}  // namespace recur::scan_engine::detail
