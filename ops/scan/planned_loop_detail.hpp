#pragma once
// Internal to the captured loop (captured_loop.cpp): a loop node whose step's ops are all
// products h W of a step's value and a loop-invariant weight (scan_step_matmul) and
// elementwise chains compiled for one block (scan_elementwise_chain) runs its steps here, on
// buffers planned once for the whole loop: a value a backward rule reads in a buffer with a
// row per step (a stacked output's row is its value), any other in one of two reused ones;
// the products on their kernels and the chains on their compiled calls through raw pointers.
// Nothing is made per op and step (no op copy, tensor, sink or sum of tensors): at a batch of
// one that work cost more than the arithmetic. The same kernels run in the same order, and
// each share of gradient is added where and when the loop node's own backward adds it (a
// first share taken as it is, not added to zeros): the same bits.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <recur/ops/scan/captured_loop_detail.hpp>

namespace recur::scan_engine::detail {

class PlannedLoop {
 public:
  virtual ~PlannedLoop() = default;
  // Runs every step on the node's inputs `in`; returns the node's outputs (LoopWiring::outputs).
  virtual std::vector<Tensor> forward(std::span<const Tensor> in) = 0;
  // Every step's rules, last step first; each share reaches the node's inputs through a.sink.
  virtual void backward(const BackwardArgs<Tensor>& a) const = 0;
  // Per value, whether it is kept for backward; per node input, whether a rule reads it.
  virtual const KeptValues& kept() const = 0;
  // The buffers forward kept for backward.
  virtual void held(Grads<Tensor>& out) const = 0;
};

// The plan of `w` on the node's inputs `in` over `steps`, or nullptr where an op is not one it
// runs (another op, a chain that does not compile to one block, a product of a weight made
// in the step): the loop node then runs the ops itself.
std::unique_ptr<PlannedLoop> plan_loop(const LoopWiring& w, std::span<const Tensor> in, std::int64_t steps);

// Whether loop nodes run planned where they can: on unless RECUR_SCAN_PLANNED_LOOP=off (read
// once) or set_planned_loop_switch(false); the tests compare both. For the whole process.
void set_planned_loop_switch(bool on);
bool planned_loop_switch();
// How many loops this thread has run planned: the tests see which path a loop took.
std::uint64_t planned_loop_runs();

}  // namespace recur::scan_engine::detail
