#pragma once
// Internal to the scan engine: a captured loop recorded as one tape node
// (captured_loop.cpp) instead of a node per op and step. Its forward runs the rewritten
// step's ops step after step on tensors; its backward runs their rules in reverse, step
// after step, inside the one node. What that saves against a node per op: recording each
// op, the tape's reverse loop visiting each, and the per-step output nodes the loop stacks.
// Values and gradients equal the per-op replay's bit for bit: the same ops run in the same
// order, and each share of gradient is added where and when the tape would add it (an
// input's shares through GradSink::add, step by step).
// Under create_graph the node's backward records the step's ops step by step and
// differentiates them, so gradients of gradients work as for the per-op replay; there an
// input of the loop that also takes gradient from other nodes (another loop, a term of the
// loss) gets the loop's shares summed first, then added to the others: the last bits of its
// second-order gradient may differ from the per-op replay's.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/ops/scan/step_program_detail.hpp>

namespace recur::scan_engine::detail {

// How the step's ops read each other and the node's inputs. Values are numbered per step:
// the ops' outputs in order, then the rows the step reads.
struct LoopWiring {
  struct In {
    enum class Kind : std::uint8_t { value, external, carried } kind = Kind::value;
    std::uint32_t index = 0;  // value: its number; external: the node's input; carried: the carry
  };
  std::vector<recur::detail::OpBox> ops;  // the program's, copied at every step
  std::vector<std::vector<In>> inputs;    // per op
  std::vector<std::size_t> first;         // per op: its first value
  std::vector<std::uint8_t> n_out, takes_gradient;  // per op
  std::size_t n_op_values = 0, n_values = 0;
  std::vector<std::uint32_t> row_source;  // per row value (from n_op_values on): the node input it reads row t of
  std::vector<std::size_t> carry_result;  // per carry: the value the next step reads
  struct Out {
    std::size_t result;
    bool stacked;
  };
  std::vector<Out> outputs;               // per node output
  // Per value: whether it takes a gradient at step 0 and at the later steps (a carry's
  // initial value may take none where the values the steps make do).
  std::vector<std::uint8_t> grad_first, grad_later;
  std::size_t n_inputs = 0;
};

// Per value of a loop's step, whether it is kept for backward; per node input, whether a
// rule reads it.
struct KeptValues {
  std::vector<std::uint8_t> values, inputs;
};

// What the rules of a loop's step read: reads_input(k, s), whether op k's rule reads its input
// s; keeps_output(k, o), whether the loop keeps op k's output o for a rule. A value is kept
// where a rule reads it (a carried one as the step before's value; a stacked output's row is
// free to keep), a node input where a rule reads it or a kept row of it.
template <class ReadsInput, class KeepsOutput>
KeptValues kept_values(const LoopWiring& w, const ReadsInput& reads_input, const KeepsOutput& keeps_output) {
  KeptValues kept{std::vector<std::uint8_t>(w.n_values, 0), std::vector<std::uint8_t>(w.n_inputs, 0)};
  for (std::size_t k = 0; k < w.ops.size(); ++k) {
    for (std::size_t o = 0; o < w.n_out[k]; ++o)
      if (keeps_output(k, o)) kept.values[w.first[k] + o] = 1;
    for (std::size_t s = 0; s < w.inputs[k].size(); ++s) {
      const LoopWiring::In& in = w.inputs[k][s];
      if (!reads_input(k, s)) continue;
      if (in.kind == LoopWiring::In::Kind::value) kept.values[in.index] = 1;
      else kept.inputs[in.index] = 1;  // a node input (a carry's initial value at step 0)
      if (in.kind == LoopWiring::In::Kind::carried) kept.values[w.carry_result[in.index]] = 1;
    }
  }
  for (const LoopWiring::Out& o : w.outputs)
    if (o.stacked) kept.values[o.result] = 1;
  for (std::size_t r = 0; r < w.row_source.size(); ++r)
    if (kept.values[w.n_op_values + r]) kept.inputs[w.row_source[r]] = 1;
  return kept;
}

// Whether `s` at step t reads one of the node's inputs (whose gradient is the tape's), not a
// value of the steps: a loop-invariant input, or a carry's initial value at step 0.
inline bool reads_node_input(const LoopWiring::In& s, std::int64_t t) {
  return s.kind == LoopWiring::In::Kind::external || (s.kind == LoopWiring::In::Kind::carried && t == 0);
}

// What the step's argument i is to the loop.
struct LoopArg {
  enum class Kind : std::uint8_t { unread, carried, invariant };
  Kind kind = Kind::unread;
  std::uint32_t carry = 0;  // carried: which carried value (LoopSpec::carries)
  Var value;                // invariant: the value at every step
};

// A loop as one node: the step's arguments, the values the steps carry (the value a step
// returns that the next reads, from an initial value), and what the loop returns per scan
// output (every step's value of a step result, stacked on a new axis 0, or the last one).
struct LoopSpec {
  std::vector<LoopArg> args;
  struct Carry {
    ValueRef result;  // the step's value the next step reads (a local value)
    Var initial;
  };
  std::vector<Carry> carries;
  struct Output {
    ValueRef result;  // a local value
    bool stacked = true;
  };
  std::vector<Output> outputs;
  std::int64_t steps = 0;
};

// Records the loop as one node on `tape` and returns one Var per LoopSpec::outputs, where
// `program` can run as one node with `spec`: every value it reads is an argument, an op's
// output, a value recorded before the loop, a constant or a row of one (no Shared, no
// update, no random stream), and every op can be copied. Else nullopt, recording nothing.
// A row reference (ValueRef::Kind::row) reads row t of its node at step t: the loop's
// pushed-out work is one block.
std::optional<std::vector<Var>> record_loop(Tape& tape, const StepProgram& program, const LoopSpec& spec);

// Whether captured loops run as one node where they can (on by default; tests and the bench
// switch it off to compare with the per-op replay). For the whole process.
void set_loop_node_switch(bool on);
bool loop_node_switch();

}  // namespace recur::scan_engine::detail
