#pragma once
// Truncated backpropagation through time over a stream, TBPTT(k1, k2) in the sense of
// Williams and Peng: every k1 new steps, backpropagate the losses of those k1 steps
// through the last k2 steps (k2 >= k1). k1 = k2 is the common chunked case; k2 > k1
// recomputes an overlap of k2 - k1 steps so each loss sees a longer history.
//
// The stream arrives in pieces of any length (feed), or all at once. The carried state is
// kept as plain values between windows: each window starts from it as constants on a new
// tape, which is the explicit detach. Memory is bounded by k2 steps: one window's tape
// (its steps are copied out of the buffer) and at most k2 buffered input steps besides
// the piece being fed, whatever the stream's length. A piece is read in place, never
// copied again as its windows are consumed.
//
// Window ending at step e (e = k1, 2k1, ...): it starts at c = max(0, e - k2) from the
// carried state, counts the losses of steps [e - k1, e) and carries the state at
// c' = max(0, e + k1 - k2) (the next window's start). The model runs in two calls, over
// [c, c') and [c', e), so the state at c' is at hand without an extra forward pass.
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur::nn {

struct TbpttOptions {
  std::int64_t k1 = 0;         // backpropagate every k1 steps
  std::int64_t k2 = 0;         // through the last k2 steps; 0 means k2 = k1
  std::int64_t time_axis = 0;  // time axis of the inputs and targets fed
};

// What the model returns for one call: the SUM of the per-step losses of the steps it was
// told to count (an undefined Var when it counts none), and its state after the last step.
struct ChunkResult {
  Var loss_sum;
  std::vector<Var> state;
};

// model(state, inputs, targets, count_from): runs the steps of `inputs` (time along
// time_axis) from `state` (Vars on the current tape) and sums the losses of steps
// count_from, count_from + 1, ... (indices within this call).
using ChunkModel = std::function<ChunkResult(std::span<const Var> state, const Tensor& inputs,
                                             const Tensor& targets, std::int64_t count_from)>;

struct WindowReport {
  std::int64_t end = 0;         // stream steps consumed when this window was trained
  std::int64_t steps = 0;       // steps backpropagated through (<= k2)
  std::int64_t counted = 0;     // steps whose losses were counted (k1; fewer at flush)
  double loss = 0;              // mean per-step loss over the counted steps
  std::size_t tape_bytes = 0;   // bytes the window's tape held for backward
};

using AfterBackward = std::function<void(const WindowReport&)>;

class TruncatedBptt {
 public:
  TruncatedBptt(TbpttOptions options, std::vector<Tensor> initial_state, ChunkModel model);

  // Appends a piece of the stream (targets may be undefined). For every k1 new steps it
  // trains one window: forward, backward of the mean counted loss (gradients accumulate in
  // the Shared parameters the model reads), then after_backward(report), where the
  // optimizer steps and zeroes the gradients. If the model or the backward pass throws,
  // that window is not trained and feed rethrows, keeping only the windows trained before
  // it: position() is where the last of them ended (the position before the call if none)
  // and the piece's later steps are not kept, so feeding them again carries on. (An
  // exception from after_backward comes once its window is trained, which then counts.)
  void feed(const Tensor& inputs, const Tensor& targets, const AfterBackward& after_backward);
  // Trains on the steps fed since the last window (fewer than k1), if any.
  void flush(const AfterBackward& after_backward);
  // Starts a new stream from `state` (e.g. zeros at a document boundary).
  void reset(std::vector<Tensor> state);

  // The state carried into the next window, and the stream position it belongs to.
  const std::vector<Tensor>& carried_state() const { return state_; }
  std::int64_t carried_position() const { return carry_; }
  std::int64_t position() const { return position_; }

 private:
  void train_window(std::int64_t end, std::int64_t next_carry, const AfterBackward& after_backward);
  Tensor buffered(const Tensor& buffer, std::int64_t from, std::int64_t to) const;
  void keep_own_copy(const Tensor& inputs, const Tensor& targets);

  TbpttOptions options_;
  ChunkModel model_;
  std::vector<Tensor> state_;  // state at step carry_
  Tensor inputs_, targets_;    // stream steps [carry_, position_)
  std::int64_t carry_ = 0, done_ = 0, position_ = 0;
};

}  // namespace recur::nn
