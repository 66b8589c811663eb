#include <recur/ops/nn/direction.hpp>

#include <recur/ops/indexing.hpp>
#include <recur/ops/nn/sequence_lengths_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn::detail {

DirectionOutput run_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                              const Var& h0, const Var& c0, bool reverse, const std::vector<std::int64_t>& lengths) {
  const bool recompute = options.checkpoint.recomputes();
  if (recompute) return scan_direction(kind, options, input, w, h0, c0, reverse, lengths);
  return fused_direction({.kind = kind,
                          .nonlinearity = options.nonlinearity,
                          .linear_before_reset = options.linear_before_reset,
                          .reverse = reverse,
                          .truncate_gradient = options.truncate_gradient,
                          .lengths = lengths.empty() ? SequenceLengths() : SequenceLengths(lengths)},
                         input, w, h0, c0);
}

DirectionOutput fused_direction(const FusedRecurrenceOptions& options, const Var& input, const CellWeights& w,
                                const Var& h0, const Var& c0) {
  const std::int64_t steps = input.size(0);
  // The split form: a loss on the outputs hands its gradient to the op without a padded copy.
  const FusedOutputs fused = fused_recurrence_split(options, input, w, h0, c0);
  DirectionOutput out;
  // Past an element's length its rows hold its carried state: zero them.
  out.outputs = fill_past_lengths(fused.outputs, options.lengths.values);
  // The loop's last row is every element's state after its last step.
  out.h_n = index(fused.outputs, 0, options.reverse ? 0 : steps - 1);
  out.c_n = fused.c_n;
  return out;
}

}  // namespace recur::nn::detail
