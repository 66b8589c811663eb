#pragma once
// Internal to the sequence layers (ops/nn/recurrent.cpp): one layer in one direction, as
// the fused op of fused_recurrence.hpp or, when recomputation is asked for (checkpoints
// release values per iteration), as one scan over time (scan_recurrence.hpp). This sits above both paths; neither includes it.
#include <recur/ops/nn/fused_recurrence.hpp>
#include <recur/ops/nn/recurrent.hpp>
#include <recur/ops/nn/scan_recurrence.hpp>

namespace recur::nn::detail {

// input [T, B, I] with T >= 1, h0 and c0 (LSTM only) [B, H], lengths (empty or one per
// batch element), all checked by the caller. Outputs past an element's length are zero,
// h_n and c_n its state after its last step.
DirectionOutput run_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                              const Var& h0, const Var& c0, bool reverse, const std::vector<std::int64_t>& lengths);

// The fused op's path of run_direction, also the ONNX importer's (the same results from
// options, whose lengths are empty or one value per batch element).
DirectionOutput fused_direction(const FusedRecurrenceOptions& options, const Var& input, const CellWeights& w,
                                const Var& h0, const Var& c0);

}  // namespace recur::nn::detail
