#pragma once
// Internal to the sequence layers (ops/nn/recurrent.cpp): one layer in one direction as
// one scan over time.
#include <recur/ops/nn/recurrent.hpp>

namespace recur::nn::detail {

struct DirectionOutput {
  Var outputs;  // [T, B, H] in time order (also for the reverse direction)
  Var h_n, c_n;  // [B, H]; c_n LSTM only
};

// input [T, B, I] with T >= 1, h0 and c0 (LSTM only) [B, H], all checked by the caller.
DirectionOutput run_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                              const Var& h0, const Var& c0, bool reverse);

}  // namespace recur::nn::detail
