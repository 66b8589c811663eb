#include <recur/ops/nn/tbptt.hpp>

#include <algorithm>
#include <string>

#include <recur/autodiff/tape.hpp>
#include <recur/core/error.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>

namespace recur::nn {
namespace {

constexpr std::string_view kOp = "TruncatedBptt";

std::int64_t time_axis_of(const Tensor& t, std::int64_t axis, std::string_view arg) {
  const auto rank = static_cast<std::int64_t>(t.shape().size());
  const std::int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail<AxisError>(kOp, "time_axis ", axis, " is out of range for '", arg, "' of shape ", to_string(t.shape()));
  return a;
}

Tensor append(const Tensor& buffer, const Tensor& piece, std::int64_t axis) {
  if (!buffer.defined()) return piece;
  const Tensor parts[] = {buffer, piece};
  return concat(std::span<const Tensor>(parts), axis);
}

}  // namespace

TruncatedBptt::TruncatedBptt(TbpttOptions options, std::vector<Tensor> initial_state, ChunkModel model)
    : options_(options), model_(std::move(model)), state_(std::move(initial_state)) {
  if (options_.k2 == 0) options_.k2 = options_.k1;
  if (options_.k1 < 1) fail<ValueError>(kOp, "k1 must be at least 1, got ", options_.k1);
  if (options_.k2 < options_.k1)
    fail<ValueError>(kOp, "k2 (", options_.k2, ") must be at least k1 (", options_.k1, ")");
  if (!model_) fail<ValueError>(kOp, "the model function is empty");
}

void TruncatedBptt::reset(std::vector<Tensor> state) {
  state_ = std::move(state);
  inputs_ = Tensor();
  targets_ = Tensor();
  carry_ = done_ = position_;
}

Tensor TruncatedBptt::buffered(const Tensor& buffer, std::int64_t from, std::int64_t to) const {
  if (!buffer.defined()) return buffer;
  return slice(buffer, time_axis_of(buffer, options_.time_axis, "buffer"), from - carry_, to - carry_);
}

void TruncatedBptt::feed(const Tensor& inputs, const Tensor& targets, const AfterBackward& after_backward) {
  const std::int64_t axis = time_axis_of(inputs, options_.time_axis, "inputs");
  const std::int64_t steps = inputs.shape()[axis];
  if (targets.defined()) {
    const std::int64_t target_axis = time_axis_of(targets, options_.time_axis, "targets");
    if (targets.shape()[target_axis] != steps)
      fail<ShapeError>(kOp, "inputs of shape ", to_string(inputs.shape()), " and targets of shape ",
                       to_string(targets.shape()), " differ in length along time_axis ", options_.time_axis);
    if (inputs_.defined() != targets_.defined() && position_ > carry_)
      fail<ValueError>(kOp, "targets given for some pieces of the stream and not for others");
  }
  // Concatenation checks that the piece fits the buffer (ShapeError/DTypeError) before
  // anything changes.
  Tensor new_inputs = append(inputs_, inputs, axis);
  Tensor new_targets = targets.defined() ? append(targets_, targets, options_.time_axis) : Tensor();
  const Tensor old_inputs = inputs_, old_targets = targets_;
  const std::int64_t old_position = position_;
  inputs_ = std::move(new_inputs);
  targets_ = std::move(new_targets);
  position_ += steps;
  try {
    while (position_ - done_ >= options_.k1) {
      const std::int64_t end = done_ + options_.k1;
      train_window(end, std::max<std::int64_t>(0, end + options_.k1 - options_.k2), after_backward);
    }
  } catch (...) {
    // A window that failed changed nothing (train_window moves the stream only once its
    // backward is done). Drop the piece's steps after the last window trained: with none
    // trained the stream is as it was before the call; otherwise it ends where that
    // window ended, and feeding the rest of the piece carries on.
    if (done_ <= old_position) {
      inputs_ = old_inputs;
      targets_ = old_targets;
      position_ = old_position;
    } else {
      inputs_ = buffered(inputs_, carry_, done_);
      targets_ = buffered(targets_, carry_, done_);
      position_ = done_;
    }
    keep_own_copy(inputs, targets);
    throw;
  }
  keep_own_copy(inputs, targets);
}

void TruncatedBptt::keep_own_copy(const Tensor& inputs, const Tensor& targets) {
  // The steps kept for later windows must not be the caller's buffer, which it may refill.
  if (inputs_.defined() && inputs_.storage() == inputs.storage()) inputs_ = inputs_.clone();
  if (targets_.defined() && targets.defined() && targets_.storage() == targets.storage()) targets_ = targets_.clone();
}

void TruncatedBptt::flush(const AfterBackward& after_backward) {
  if (position_ == done_) return;
  const std::int64_t end = position_;
  train_window(end, std::clamp<std::int64_t>(end + options_.k1 - options_.k2, carry_, end), after_backward);
}

void TruncatedBptt::train_window(std::int64_t end, std::int64_t next_carry, const AfterBackward& after_backward) {
  const std::int64_t start = carry_, count_from = done_;
  Tape tape;
  std::vector<Var> state;
  state.reserve(state_.size());
  for (const Tensor& s : state_) state.push_back(tape.constant(s));

  Var loss_sum;
  auto run = [&](std::int64_t from, std::int64_t to) {
    // The window's steps as buffers of their own, so its tape holds k2 steps, not a view
    // that keeps the whole fed piece alive.
    auto own = [](const Tensor& t) { return t.defined() ? t.clone() : t; };
    ChunkResult r = model_(state, own(buffered(inputs_, from, to)), own(buffered(targets_, from, to)),
                           std::max<std::int64_t>(0, count_from - from));
    if (r.state.size() != state.size())
      fail<ValueError>(kOp, "the model returned ", r.state.size(), " state values for ", state.size(), " carried");
    if (r.loss_sum.defined()) loss_sum = loss_sum.defined() ? loss_sum + r.loss_sum : r.loss_sum;
    state = std::move(r.state);
  };
  std::vector<Tensor> carried = state_;
  if (next_carry > start) {
    run(start, next_carry);
    carried.clear();
    for (const Var& s : state) carried.push_back(s.value());
  }
  if (end > next_carry) run(next_carry, end);
  if (!loss_sum.defined()) fail<ValueError>(kOp, "the model counted no loss for steps ", count_from, "..", end);

  WindowReport report;
  report.end = end;
  report.steps = end - start;
  report.counted = end - count_from;
  const Var loss = loss_sum * (1.0 / static_cast<double>(report.counted));
  report.loss = loss.value().item();
  report.tape_bytes = tape.bytes_held();
  tape.backward(loss);

  // The window is trained: move the carry point and drop the steps before it.
  inputs_ = buffered(inputs_, next_carry, position_);
  targets_ = buffered(targets_, next_carry, position_);
  state_ = std::move(carried);
  carry_ = next_carry;
  done_ = end;
  if (after_backward) after_backward(report);
}

}  // namespace recur::nn
