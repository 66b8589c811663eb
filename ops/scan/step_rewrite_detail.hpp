#pragma once
// Internal to the scan engine: a captured step (step_program_detail.hpp) rewritten before
// the loop records it, as Theano's scan_opt and cuDNN's RNN kernels do by hand:
//   merge     products of one value with several loop-invariant weights (the four gate
//             products of x_t, or of h) become one product with the weights joined, then
//             slices of it (one product's cost instead of four per step: docs/scan.md);
//   hoist     ops whose inputs do not change between steps run once, before the loop;
//   push out  ops on the sequences alone (elementwise work, a product with a loop-invariant
//             weight) run once over a block of steps (one product of all their rows), and
//             each step reads its row; with blocks shorter than the loop, the loop records
//             each block's before its first step (PushedBlocks), so that backward takes
//             their gradients a block at a time instead of holding every step's at once;
//   fuse      chains of elementwise ops of one shape become one op (elementwise_chain_detail.hpp),
//             reading slices along the last axis in place;
//   batch     the weight gradient of a product of a changing value and a loop-invariant
//             weight is taken over many steps' rows at once (weight_grad_rows_detail.hpp).
// Values equal the step's own; gradients too, up to the order of sums where a product's
// rows were batched or merged (docs/scan.md says which).
#include <cstdint>
#include <functional>
#include <vector>

#include <recur/ops/scan/step_program_detail.hpp>

namespace recur::scan_engine::detail {

// What the step's argument i is.
struct ArgRole {
  enum class Kind : std::uint8_t { sequence, carried, invariant };
  Kind kind = Kind::carried;
  Shape shape;
  // A sequence's values at steps [begin, end) stacked on a new axis 0 in loop order; empty
  // when the loop does not read it in order (it then stays in the step).
  std::function<Var(std::int64_t begin, std::int64_t end)> every_step;
};

struct RewriteContext {
  std::vector<ArgRole> args;
  std::int64_t steps = 0;
  bool gradients = false;  // the loop records gradients
  // Push ops on the sequences out of the loop: their results, held for every step, are not
  // released by a checkpoint policy (which recomputes them with the step instead).
  bool push_out = true;
  // Steps per block of pushed-out work (>= steps: one block, recorded before the loop).
  std::int64_t block_steps = 0;
};

// The pushed-out work of the first block of steps, as rewrite recorded it, for the loop to
// record again over each later block [t0, t1): the sequences' values of the block
// (ArgRole::every_step(t0, t1)) in place of `args`' nodes, then `ops` in order on them. A
// step's row ref (ValueRef::Kind::row) names the first block's node; at step t it reads row
// t - t0 of that node's counterpart in t's block.
struct PushedBlocks {
  struct Op {
    recur::detail::OpBox op;            // empty: a reshape to `shape`, its first size per step
    Shape shape;
    std::vector<std::uint32_t> inputs;  // the first block's nodes (or nodes made before the loop)
    bool takes_gradient = true;
    std::uint32_t node = 0;             // the first block's node of its value
  };
  std::int64_t steps = 0;  // per block; 0: one block for the whole loop (nothing to record again)
  std::vector<std::pair<std::size_t, std::uint32_t>> args;  // (argument, the first block's node)
  std::vector<Op> ops;
};

struct RewriteCounts {
  int merged = 0, hoisted = 0, pushed_out = 0, batched_weight_grads = 0, fused_chains = 0;
};

// The rewrites that can be switched, for the whole process (tests and the bench switch them;
// the defaults are what measured best on the whole: docs/scan.md has the figures, merging
// included, which gains at S and costs 1-2% at M).
struct RewriteSwitches {
  bool merge_products = true;
  bool fuse_elementwise = true;
  // Rows (of the first sequence: steps x its batch) per block of pushed-out work on a full
  // tape: large enough for the products to run at speed, small enough that backward does
  // not hold every step's gradient of them at once.
  std::int64_t pushed_rows = 2048;
};
void set_rewrite_switches(RewriteSwitches switches);
RewriteSwitches rewrite_switches();

// Fuses the chains of elementwise ops of `program`; shape_of gives the shape of a value
// that is not the program's own (an argument, an outer node, a row). Returns the chains made.
int fuse_elementwise(StepProgram& program, const std::function<Shape(const ValueRef&)>& shape_of);
// Per op of `program`, whether fuse_elementwise would run it inside a chain; `program` is
// left as it is.
std::vector<std::uint8_t> ops_fused(StepProgram& program, const std::function<Shape(const ValueRef&)>& shape_of);

// Records the values the steps share on `tape` (before the loop's first step) and returns
// the program each step replays; `blocks` (if given) receives the pushed-out work to record
// again for each later block of steps.
StepProgram rewrite(Tape& tape, const StepProgram& program, const RewriteContext& context,
                    RewriteCounts* counts = nullptr, PushedBlocks* blocks = nullptr);

}  // namespace recur::scan_engine::detail
