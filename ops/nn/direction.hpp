#pragma once
// Internal to the sequence layers (ops/nn/recurrent.cpp): one layer in one direction, as
// the fused op of fused_recurrence.hpp (RNN and LSTM) or as one scan over time (GRU, and
// every cell when recomputation is asked for: checkpoints release values per iteration).
#include <recur/ops/nn/fused_recurrence.hpp>
#include <recur/ops/nn/recurrent.hpp>

namespace recur::nn::detail {

struct DirectionOutput {
  Var outputs;  // [T, B, H] in time order (also for the reverse direction)
  Var h_n, c_n;  // [B, H]; c_n LSTM only
};

// input [T, B, I] with T >= 1, h0 and c0 (LSTM only) [B, H], all checked by the caller.
DirectionOutput run_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                              const Var& h0, const Var& c0, bool reverse);

// The scan path for an RNN or LSTM direction, with fused_recurrence's result layout: what
// the fused op's create_graph backward differentiates, and what tests compare it with.
Var scan_recurrence(const FusedRecurrenceOptions& options, const Var& input, const CellWeights& w, const Var& h0,
                    const Var& c0);

}  // namespace recur::nn::detail
