#pragma once
// Internal to the sequence layers and the fused layer op: their `lengths` option (PyTorch's
// packed sequences, ONNX's sequence_lens). The checks are the scan engine's
// (ops/scan/lengths_mask_detail.hpp), plus an integer dtype; what the layers add on top is
// zeroing each element's steps past its length.
#include <cstdint>
#include <string_view>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::nn::detail {

// `given` read and checked for an input of shape `input_shape` whose time axis is
// `time_axis` and batch axis `batch_axis`: a 1-D int64 tensor or a list, one whole number
// 0 <= lengths[b] <= T per batch element. ShapeError / DTypeError / ValueError naming `op`,
// 'lengths' and the shapes. Empty when not given.
std::vector<std::int64_t> checked_lengths(std::string_view op, const SequenceLengths& given, const Shape& input_shape,
                                          std::int64_t time_axis, std::int64_t batch_axis);

// outputs [T, B, ...] with the steps t >= lengths[b] of each element b set to `fill`
// (broadcast against them; a scalar zero when undefined); outputs itself when lengths is
// empty.
Var fill_past_lengths(const Var& outputs, const std::vector<std::int64_t>& lengths, const Var& fill = Var());

// The state each element b holds after its last step, from `init` [B, ...] and the
// states `stacked` [T, B, ...] a scan with these lengths stacked in loop order (zero where
// an element did not run): under reverse every running element's last step is the loop's
// last; elements of length 0 keep init.
Var state_after_lengths(const Var& stacked, const Var& init, const std::vector<std::int64_t>& lengths, bool reverse);

}  // namespace recur::nn::detail
