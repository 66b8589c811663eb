// ONNX's Loop on the scan engine (onnx_loop): trip count, a condition the body computes
// (the engine's until), zero iterations, and truncation and recomputation against hand
// computations and full gradients; errors.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using S = std::span<const Var>;
using testing::values;

Tensor int64_value(std::int64_t v) { return full({}, static_cast<double>(v), DType::int64); }

// h' = tanh(h * w), a scan output h'; the condition holds while the iteration is below `last`.
OnnxBody tanh_body(const Var& w, std::int64_t last) {
  return [w, last](S a) -> std::vector<Var> {
    const Var h = tanh(a[2] * w);
    const bool go_on = a[0].value().item<std::int64_t>() < last;
    return {Var(int64_value(go_on ? 1 : 0)), h, h};
  };
}

TEST(OnnxLoop, TripCountAndCondition) {
  Tape tape;
  const Var h0 = tape.variable(tensor({0.5, -0.3}, DType::float64));
  const Var w = tape.variable(tensor({1.5, 0.7}, DType::float64));
  // The body sees the iteration number and cond = 1.
  std::vector<std::int64_t> seen;
  const OnnxBody counting = [&](S a) -> std::vector<Var> {
    seen.push_back(a[0].value().item<std::int64_t>());
    EXPECT_EQ(a[1].value().item<std::int64_t>(), 1);
    return {Var(int64_value(1)), a[2] * w, a[2]};
  };
  const auto four = onnx_loop(counting, {h0}, {.max_trip_count = 4});
  EXPECT_EQ(seen, (std::vector<std::int64_t>{0, 1, 2, 3}));
  EXPECT_EQ(four.iterations, 4);
  const Tensor w4 = pow(w.value(), 4.0);
  EXPECT_EQ(values(four.final_states[0]), values(h0.value() * w4));
  EXPECT_EQ(four.scan_outputs[0].shape(), (Shape{4, 2}));

  // No trip count: the body's condition ends it, after the iteration that turns it false.
  const auto until = onnx_loop(tanh_body(w, 2), {h0});
  EXPECT_EQ(until.iterations, 3);
  Tensor h = h0.value();
  for (int i = 0; i < 3; ++i) h = tanh(h * w.value());
  EXPECT_EQ(values(until.final_states[0]), values(h));
  // Both: the smaller bound wins.
  EXPECT_EQ(onnx_loop(tanh_body(w, 2), {h0}, {.max_trip_count = 2}).iterations, 2);
  // cond false: no iteration, the scan outputs' shapes learnt from a call that keeps nothing.
  const auto size = tape.size();
  const auto none = onnx_loop(tanh_body(w, 2), {h0}, {.max_trip_count = 5, .cond = false});
  EXPECT_EQ(none.iterations, 0);
  EXPECT_EQ(values(none.final_states[0]), values(h0));
  EXPECT_EQ(none.scan_outputs[0].shape(), (Shape{0, 2}));
  EXPECT_LE(tape.size(), size + 2);  // the empty stacked output and its view, nothing of the body
}

// Truncation to the last k iterations: the gradient of sum(h_T) stops at h_{T-k}, as a hand
// computation with h_{T-k} made a constant says.
TEST(OnnxLoop, TruncationMatchesHandComputation) {
  const Tensor h0_value = tensor({0.5, -0.3}, DType::float64), w_value = tensor({1.2, 0.8}, DType::float64);
  for (const bool by_condition : {false, true}) {
    Tape tape;
    const Var h0 = tape.variable(h0_value), w = tape.variable(w_value);
    const OnnxLoopOptions options{.max_trip_count = by_condition ? std::nullopt : std::optional<std::int64_t>(4),
                                    .truncate_gradient = 2};
    const auto r = onnx_loop(tanh_body(w, 3), {h0}, options);  // 4 iterations either way
    ASSERT_EQ(r.iterations, 4);
    tape.backward(sum(r.final_states[0]));
    const Tensor got_w = w.grad(), got_h0 = h0.grad();

    Tape hand;
    const Var w2 = hand.variable(w_value);
    Tensor h = h0_value;
    for (int i = 0; i < 2; ++i) h = tanh(h * w_value);
    Var v = hand.constant(h);
    for (int i = 0; i < 2; ++i) v = tanh(v * w2);
    hand.backward(sum(v));
    EXPECT_EQ(values(got_w), values(w2.grad())) << "by condition: " << by_condition;
    EXPECT_EQ(values(got_h0), (std::vector<double>{0, 0}));
  }
}

// Recomputation changes memory, not gradients: every policy against the full tape.
TEST(OnnxLoop, CheckpointGivesTheFullGradients) {
  const Tensor h0_value = tensor({0.5, -0.3}, DType::float64), w_value = tensor({1.2, 0.8}, DType::float64);
  const auto gradients = [&](const OnnxLoopOptions& options) {
    Tape tape;
    const Var h0 = tape.variable(h0_value), w = tape.variable(w_value);
    const auto r = onnx_loop(tanh_body(w, 100), {h0}, options);
    tape.backward(sum(r.final_states[0]) + sum(r.scan_outputs[0] * r.scan_outputs[0]));
    return std::vector<double>{values(w.grad())[0], values(w.grad())[1], values(h0.grad())[0], values(h0.grad())[1]};
  };
  const auto full_tape = gradients({.max_trip_count = 7});
  for (const Checkpoint& c : {Checkpoint::every_k(2), Checkpoint::auto_sqrt(), Checkpoint::snapshots(2)}) {
    const auto got = gradients({.max_trip_count = 7, .checkpoint = c});
    for (std::size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], full_tape[i], 1e-13);
  }
}

TEST(OnnxLoop, Errors) {
  Tape tape;
  const Var h0 = tape.variable(tensor({0.5, -0.3}, DType::float64)), w = tape.variable(tensor({1.0, 1.0}, DType::float64));
  testing::expect_clean_failure<ValueError>(
      tape, [&] { onnx_loop(tanh_body(w, 2), {h0}, {.max_trip_count = -1}); }, {"onnx_loop", "max_trip_count = -1"});
  testing::expect_clean_failure<ValueError>(
      tape, [&] { onnx_loop(tanh_body(w, 2), {h0}, {.checkpoint = Checkpoint::snapshots(2)}); },
      {"onnx_loop", "need max_trip_count", "every_k"});
  const OnnxBody no_cond = [](S a) -> std::vector<Var> { return {a[2]}; };
  testing::expect_clean_failure<ValueError>(tape, [&] { onnx_loop(no_cond, {h0}, {.max_trip_count = 2}); },
                                            {"onnx_loop", "returned 1 values", "the condition and the 1 states"});
  const OnnxBody wide_cond = [](S a) -> std::vector<Var> { return {a[2], a[2]}; };
  testing::expect_clean_failure<ShapeError>(tape, [&] { onnx_loop(wide_cond, {h0}, {.max_trip_count = 2}); },
                                            {"onnx_loop", "condition", "[2]", "single value"});
  const OnnxBody growing = [](S a) -> std::vector<Var> { return {Var(int64_value(1)), concat({a[2], a[2]}, 0)}; };
  testing::expect_clean_failure<ShapeError>(tape, [&] { onnx_loop(growing, {h0}, {.max_trip_count = 2}); },
                                            {"onnx_loop", "state 0"});
}

}  // namespace
}  // namespace recur
