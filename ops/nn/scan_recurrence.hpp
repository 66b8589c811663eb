#pragma once
// Internal to the sequence layers: one layer in one direction as one scan over time of the
// cells of cells.hpp (per-step ops, differentiable to any order). The sequence layers run
// it whenever recomputation is asked for (ops/nn/direction.hpp); the fused
// layer op differentiates it under create_graph (ops/nn/fused_recurrence.cpp), and tests
// compare the fused op with it. It depends on no other layer path: both of those include
// it, never the other way.
#include <cstdint>
#include <vector>

#include <recur/ops/nn/fused_recurrence.hpp>
#include <recur/ops/nn/recurrent.hpp>

namespace recur::nn::detail {

struct DirectionOutput {
  Var outputs;  // [T, B, H] in time order (also for the reverse direction)
  Var h_n, c_n;  // [B, H]; c_n LSTM only
};

// input [T, B, I] with T >= 1, h0 and c0 (LSTM only) [B, H], all checked by the caller.
// Reads options' nonlinearity, linear_before_reset, truncate_gradient and checkpoint.
// lengths (checked; empty: none): outputs past an element's length are zero, h_n and c_n
// its state after its last step.
DirectionOutput scan_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                               const Var& h0, const Var& c0, bool reverse,
                               const std::vector<std::int64_t>& lengths = {});

// The scan path for a direction of any cell, with fused_recurrence_split's results (also
// with lengths, whose rows at steps an element does not run hold its carried state), and
// with fused_recurrence's packed layout (not for a projected LSTM).
FusedOutputs scan_recurrence_split(const FusedRecurrenceOptions& options, const Var& input, const CellWeights& w,
                                   const Var& h0, const Var& c0);
Var scan_recurrence(const FusedRecurrenceOptions& options, const Var& input, const CellWeights& w, const Var& h0,
                    const Var& c0);

}  // namespace recur::nn::detail
