// The sequence layers' `lengths` option (sequence_lengths_detail.hpp).
#include <recur/ops/nn/sequence_lengths_detail.hpp>

#include <recur/autodiff/tape.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/scan/lengths_mask_detail.hpp>

namespace recur::nn::detail {

std::vector<std::int64_t> checked_lengths(std::string_view op, const SequenceLengths& given, const Shape& input_shape,
                                          std::int64_t time_axis, std::int64_t batch_axis) {
  if (!given.given) return {};
  if (given.tensor.defined() && given.tensor.dtype() != DType::int64)
    fail<DTypeError>(op, "argument 'lengths' of shape ", to_string(given.tensor.shape()), " is ", given.tensor.dtype(),
                     "; it must be int64 (one step count per batch element)");
  const scan_engine::LengthMask mask(op, given, input_shape[static_cast<std::size_t>(time_axis)], false, -1);
  mask.check_batch_axis("input", input_shape, batch_axis);
  return mask.lengths();
}

Var fill_past_lengths(const Var& outputs, const std::vector<std::int64_t>& lengths, const Var& fill) {
  if (lengths.empty()) return outputs;
  const std::int64_t steps = outputs.size(0), batch = outputs.size(1);
  std::vector<std::int64_t> valid(static_cast<std::size_t>(steps * batch));
  for (std::int64_t t = 0; t < steps; ++t)
    for (std::int64_t b = 0; b < batch; ++b) valid[static_cast<std::size_t>(t * batch + b)] = t < lengths[b] ? 1 : 0;
  Shape mask_shape(outputs.shape().size(), 1);  // broadcast over the feature axes
  mask_shape[0] = steps;
  mask_shape[1] = batch;
  Tape& tape = outputs.tape();
  return where(tape.constant(from_vector(valid, mask_shape)), outputs,
               fill.defined() ? fill : tape.constant(zeros({}, outputs.dtype())));
}

Var state_after_lengths(const Var& stacked, const Var& init, const std::vector<std::int64_t>& lengths, bool reverse) {
  const std::int64_t steps = stacked.size(0), batch = stacked.size(1);
  // Row k of [init; stacked] is the state after k loop steps; element b's is row k * B + b
  // of its flattening.
  const Var rows = concat({unsqueeze(init, 0), stacked}, 0);
  Shape flat = rows.shape();
  flat.erase(flat.begin());
  flat[0] = (steps + 1) * batch;
  std::vector<std::int64_t> picks;
  for (std::int64_t b = 0; b < batch; ++b) {
    const std::int64_t length = lengths[static_cast<std::size_t>(b)];
    picks.push_back((reverse ? (length > 0 ? steps : 0) : length) * batch + b);
  }
  return take(reshape(rows, flat), from_vector(picks, {batch}), 0);
}

}  // namespace recur::nn::detail
