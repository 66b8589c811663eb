#include <recur/ops/nn/direction.hpp>

#include <recur/ops/indexing.hpp>
#include <recur/ops/nn/sequence_lengths_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn::detail {

DirectionOutput run_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                              const Var& h0, const Var& c0, bool reverse, const std::vector<std::int64_t>& lengths) {
  const bool recompute = options.checkpoint.recomputes();
  if (recompute) return scan_direction(kind, options, input, w, h0, c0, reverse, lengths);
  const std::int64_t steps = input.size(0);
  const FusedOutputs fused =
      fused_recurrence_split({.kind = kind,
                              .nonlinearity = options.nonlinearity,
                              .linear_before_reset = options.linear_before_reset,
                              .reverse = reverse,
                              .truncate_gradient = options.truncate_gradient,
                              .lengths = lengths.empty() ? SequenceLengths() : SequenceLengths(lengths)},
                             input, w, h0, c0);
  DirectionOutput out;
  // Past an element's length its rows hold its carried state: zero them.
  out.outputs = fill_past_lengths(fused.outputs, lengths);
  out.h_n = index(fused.outputs, 0, reverse ? 0 : steps - 1);  // the state after the direction's last step
  out.c_n = fused.c_n;
  return out;
}

}  // namespace recur::nn::detail
