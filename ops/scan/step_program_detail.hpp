#pragma once
// Internal to the scan engine: a loop's step captured as a small program. The engine
// records the step function's first two calls with every op kept (TapeAccess::keep_all_ops),
// reads each call's nodes back into a StepProgram (ops, their attributes, how their inputs
// and outputs are wired) and, when the two programs are the same, records the remaining
// steps from the program: the step function is not called again. What the capture cannot
// prove the same at every step (a constant that changes, a value read on the host, an op
// that does not describe itself) leaves the loop to record each step as before, with the
// reason (StepCapture).
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <recur/autodiff/op_box.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur {
class Tape;
class RecordingScope;
}  // namespace recur

namespace recur::scan_engine::detail {

struct ArgRole;       // step_rewrite_detail.hpp
struct PushedBlocks;

// Where a value the step reads or returns comes from.
struct ValueRef {
  enum class Kind : std::uint8_t {
    arg,      // the step's argument `index` (a sequence tap, a carried tap, a non-sequence)
    local,    // output `output` of the program's op `index`
    outer,    // tape node `index`, recorded before the loop (a Var the step function holds)
    shared,   // the program's Shared `index`, read at each step (an update of an earlier step, if any)
    literal,  // the program's constant `index`, made inside the step
    row,      // row t at step t of tape node `index`: a value of every step, computed before the loop
  };
  Kind kind = Kind::arg;
  std::uint32_t index = 0;
  std::uint8_t output = 0;
  bool operator==(const ValueRef&) const = default;
};

struct StepOp {
  recur::detail::OpBox op;    // a copy of the op as the step recorded it
  std::vector<ValueRef> inputs;
  std::uint8_t outputs = 1;   // 1 + the outputs after the first (record_outputs)
  Shape shape;                // of its (first) output, as the step recorded it
  // False when an input wanted a gradient and the node took none (NoGrad inside the step,
  // a comparison): replayed, it takes none either. (At the first step the inputs may want
  // none yet: the loop replays the second step's program.)
  bool takes_gradient = true;
};

struct StepProgram {
  std::vector<StepOp> ops;
  std::vector<Tensor> literals;
  std::vector<Shared> shareds;
  std::vector<ValueRef> outputs;
  std::vector<std::pair<std::size_t, ValueRef>> updates;           // (shareds index, value): returned
  std::vector<std::pair<std::size_t, ValueRef>> implicit_updates;  // made inside the step (random streams)
  // The node of each argument at the step read: two arguments may be one node (two states
  // started from one Var), and which of them the step used cannot be told apart there.
  std::vector<std::uint32_t> arg_nodes;
};

// Why a step was not captured. `inherent`: the step itself rules capture out (it is not
// the same at every step, it may stop early); otherwise a limitation of the capture.
struct Refusal {
  bool inherent = true;
  std::string reason;
};

// One recorded call of the step function, as the engine saw it.
struct RecordedStep {
  std::uint32_t loop_begin = 0;  // the loop's first node: earlier nodes are outer values
  std::uint32_t begin = 0, end = 0;  // the nodes the step function recorded
  std::span<const Var> args;
  const StepResult* result = nullptr;
  std::span<const std::pair<Shared, Var>> implicit_updates;
  // The Shared values the previous step updated and their new nodes (a read now sees them).
  std::span<const std::pair<Shared, Var>> previous_updates;
};

// The program of one recorded step, or why there is none.
std::pair<std::optional<StepProgram>, Refusal> read_program(const Tape& tape, const RecordedStep& step);

// f(value) for each value the step hands back: its outputs, then the values of its returned
// updates, then those of the updates it makes inside.
template <class F>
void for_each_result(const StepProgram& program, F&& f) {
  for (const ValueRef& r : program.outputs) f(r);
  for (const auto& u : program.updates) f(u.second);
  for (const auto& u : program.implicit_updates) f(u.second);
}

// Whether the value of the program's op k (an output of it) leaves the step: an output, or
// the value of an update.
inline bool op_is_result(const StepProgram& program, std::size_t k) {
  bool found = false;
  for_each_result(program, [&](const ValueRef& r) {
    found = found || (r.kind == ValueRef::Kind::local && r.index == k);
  });
  return found;
}

// Where two programs differ, in words; nullopt when they are the same. `a` is the earlier
// step's: an argument it read that was one node with others may be any of them in `b`.
std::optional<std::string> difference(const StepProgram& a, const StepProgram& b);

// Per argument of a step with `n_args` arguments, whether the program reads it (an op's
// input, an output, an update): a loop need not make the others (a sequence's element
// whose every use was pushed out of the loop).
std::vector<std::uint8_t> arguments_read(const StepProgram& program, std::size_t n_args);

// `op` run on `inputs` and recorded as the step recorded it (a gradient when an input needs one).
Var record_program_op(Tape& tape, const recur::detail::OpBox& op, const std::vector<Var>& inputs,
                      bool takes_gradient = true);
// The same for an op of several outputs: every output, its main first.
std::vector<Var> record_program_op_outputs(Tape& tape, const recur::detail::OpBox& op, const std::vector<Var>& inputs,
                                           bool takes_gradient = true);

// The values one step of a program produces, recorded on the tape: its outputs, returned
// updates and the updates it made inside (handed to `scope` as a step's draws are).
class StepReplay {
 public:
  // `blocks`: the program's pushed-out work, recorded again for each block of steps after the first.
  StepReplay(Tape& tape, const StepProgram& program, const PushedBlocks& blocks);
  StepResult run(std::span<const Var> args, std::int64_t t, RecordingScope& scope);
  // Before step t0, the first of the block [t0, t1): records the block's pushed-out work on
  // the sequences' values of its steps (args[i].every_step); its rows are what the steps read.
  void begin_block(std::int64_t t0, std::int64_t t1, const std::vector<ArgRole>& args);
  // After the block's last step: drops the buffers of its pushed-out work that no backward
  // rule reads (its rows are read: each step's sums took them).
  void drop_unread_block();
  // After the loop: drops the buffers of the values made before its steps, nodes [begin,
  // end) (the input products over every step, once every step has read its row), that no
  // rule reads and the step does not return as they are.
  void drop_unread_before(std::uint32_t begin, std::uint32_t end);
  // After run: drops the buffers of the step's values that no backward rule reads (a product
  // only a sum reads, a row of an input product): TapeAccess::drop_unread_value. Not the
  // values the step returns or updates with.
  void drop_unread();

 private:
  Var resolve(const ValueRef& r, std::span<const Var> args, std::int64_t t);
  // The current block's node of first-block node `first` (itself in the first block).
  std::uint32_t block_node(std::uint32_t first) const;
  // Whether a backward rule reads readers_[value]'s value, node `id` at this step: its own
  // op's, or a reader's (after run).
  bool read_by_backward(std::size_t value, std::uint32_t id) const;

  Tape& tape_;
  const StepProgram& program_;
  std::vector<Var> literals_;   // made once, before the loop's steps
  std::vector<std::size_t> first_value_;  // op k's first output in values_
  std::vector<Var> values_;
  std::vector<Var> shared_reads_;
  std::vector<std::pair<std::uint32_t, Var>> rows_;  // this step's rows of precomputed nodes
  const PushedBlocks& blocks_;
  std::int64_t block_begin_ = 0;  // the current block's first step
  // The first block's pushed-out nodes -> the current block's (empty in the first block).
  std::unordered_map<std::uint32_t, std::uint32_t> block_nodes_;
  // Per value the program makes (ops' first outputs and rows): the (op, input) pairs that
  // read it; and whether the step returns it (or updates a Shared with it).
  std::vector<std::pair<ValueRef, std::vector<std::pair<std::uint32_t, std::uint32_t>>>> readers_;
  std::vector<ValueRef> returned_;
  std::optional<std::vector<std::size_t>> droppable_;  // readers_ entries drop_unread drops
};

// Per op node in [begin, end), in one pass over the tape: 1 where a backward rule reads its
// elements (its own op's, or that of a later node that takes it as an input), or it is no
// op node; 0 where its buffer can go (a loop's products over every step, once the steps are
// recorded: each step's row of them is dropped already).
std::vector<std::uint8_t> read_by_backward(const Tape& tape, std::uint32_t begin, std::uint32_t end);

}  // namespace recur::scan_engine::detail
