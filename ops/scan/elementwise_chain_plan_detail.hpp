#pragma once
// Internal to the elementwise chain: what its backward reads and how it hands gradients on,
// worked out once when a chain is made (elementwise_chain_plan.cpp), not at every step.
#include <recur/ops/scan/elementwise_chain_detail.hpp>

namespace recur::scan_engine::detail::chain {

// Fills p's kept, recomputed, outputs_read, slots_read, gradient_copy_of,
// output_not_operand and folded from its slots, code and outputs.
void plan_backward(ChainProgram& p);

}  // namespace recur::scan_engine::detail::chain
