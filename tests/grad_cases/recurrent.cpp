// Gradient-check rows: the fused recurrent ops (ops/nn/pointwise.hpp), the cells built on
// them, and their steps run by scan the way the sequence layers run them. First order
// checks the hand-written loops, second order the backward built from ops.
#include "grad_table.hpp"

namespace recur::testing {
namespace {

using namespace recur::nn;

std::int64_t draw(Rng& rng, std::int64_t lo, std::int64_t hi) {
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}

// [B, w1 * H], [B, w2 * H], ... for random B and H.
std::function<std::vector<Shape>(Rng&)> step_shapes(std::vector<std::int64_t> widths) {
  return [=](Rng& rng) {
    const std::int64_t b = draw(rng, 1, 3), h = draw(rng, 1, 4);
    std::vector<Shape> out;
    for (auto w : widths) out.push_back({b, w * h});
    return out;
  };
}

// A cell's arguments: x [B, I], h [B, H], (c [B, H],) w_ih [G*H, I], w_hh [G*H, H],
// b_ih and b_hh [G*H]; with `steps`, x gets a leading time axis [T, B, I].
std::function<std::vector<Shape>(Rng&)> cell_shapes(std::int64_t gates, bool with_c, bool steps = false) {
  return [=](Rng& rng) {
    const std::int64_t b = draw(rng, 1, 3), i = draw(rng, 1, 3), h = draw(rng, 1, 3);
    std::vector<Shape> out{steps ? Shape{draw(rng, 1, 3), b, i} : Shape{b, i}, {b, h}};
    if (with_c) out.push_back({b, h});
    out.insert(out.end(), {{gates * h, i}, {gates * h, h}, {gates * h}, {gates * h}});
    return out;
  };
}

CellWeights weights(S x, std::size_t first) { return {x[first], x[first + 1], x[first + 2], x[first + 3]}; }

// A projected LSTM's arguments: x [B, I] (or [T, B, I] with `steps`), h [B, P], c [B, H],
// w_ih [4H, I], w_hh [4H, P], b_ih and b_hh [4H], w_hr [P, H] with P < H.
std::function<std::vector<Shape>(Rng&)> projected_lstm_shapes(bool steps) {
  return [=](Rng& rng) {
    const std::int64_t b = draw(rng, 1, 3), i = draw(rng, 1, 3), h = draw(rng, 2, 3), p = draw(rng, 1, h - 1);
    return std::vector<Shape>{steps ? Shape{draw(rng, 1, 3), b, i} : Shape{b, i}, {b, p}, {b, h}, {4 * h, i},
                              {4 * h, p}, {4 * h}, {4 * h}, {p, h}};
  };
}
CellWeights projected_weights(S x) { return {x[3], x[4], x[5], x[6], x[7]}; }

// Every step's h (and c) of a scan over x's projection, as the layers run it.
Var lstm_scan(S x) {
  const Var xp = project(x[0], x[3], x[5] + x[6]);
  auto r = scan([](S a) -> StepResult {
    const LstmState s = lstm_step(a[0], a[1], a[2], a[3], Var());
    return {s.h, s.c};
  }, {.sequences = {xp}, .outputs_info = {x[1], x[2]}, .non_sequences = {x[4]}});
  return concat({r[0], r[1]}, 2);
}

Var rnn_scan(S x) {
  const Var xp = project(x[0], x[2], x[4]);
  auto r = scan([](S a) -> StepResult { return rnn_step(a[0], a[1], a[2], a[3], Nonlinearity::tanh); },
                {.sequences = {xp}, .outputs_info = {x[1]}, .non_sequences = {x[3], x[5]}});
  return r[0];
}

Var gru_scan(S x) {
  const Var xp = project(x[0], x[2], x[4]);
  auto r = scan([](S a) -> StepResult { return gru_step(a[0], a[1], a[2], a[3]); },
                {.sequences = {xp}, .outputs_info = {x[1]}, .non_sequences = {x[3], x[5]}, .go_backwards = true});
  return r[0];
}

// A hand-written LSTM cell's arguments: x [T, B, I] with T >= 3 (scan captures its step from
// three steps on), h and c [B, H], W_x [I, 4H], W_h [H, 4H], b [4H].
std::function<std::vector<Shape>(Rng&)> written_cell_shapes() {
  return [](Rng& rng) {
    const std::int64_t t = draw(rng, 3, 4), b = draw(rng, 1, 3), i = draw(rng, 1, 3), h = draw(rng, 1, 3);
    return std::vector<Shape>{{t, b, i}, {b, h}, {b, h}, {i, 4 * h}, {h, 4 * h}, {4 * h}};
  };
}

// That cell in scan, captured (ops/scan/step_program_detail.hpp): the steps replay its
// program, the input product runs over every step at once, W_h's gradient is taken over
// the steps' rows (scan_step_matmul, scan_weight_grad_sum), and the gates' elementwise
// work is one fused chain reading the split's slices in place (scan_elementwise_chain).
Var captured_lstm_scan(S x) {
  auto r = scan([](S a) -> StepResult {
    const std::vector<Var> g = split(matmul(a[0], a[3]) + matmul(a[1], a[4]) + a[5], 1, 4);
    const Var c = sigmoid(g[1]) * a[2] + sigmoid(g[0]) * tanh(g[2]);
    return {sigmoid(g[3]) * tanh(c), c};
  }, {.sequences = {x[0]}, .outputs_info = {x[1], x[2]}, .non_sequences = {x[3], x[4], x[5]},
      .capture = Capture::required});
  return concat({r[0], r[1]}, 2);
}

// Lengths for x [T, B, I]: element b runs (2 b + 1) mod (T + 1) steps, so batches of
// two or more mix full, short and (T = 1, b = 1) empty sequences.
SequenceLengths some_lengths(const Var& x) {
  std::vector<std::int64_t> lengths;
  for (std::int64_t b = 0; b < x.size(1); ++b) lengths.push_back((2 * b + 1) % (x.size(0) + 1));
  return lengths;
}

const std::string padding_unread = "with lengths, inputs at an element's padded steps reach no output";

}  // namespace

std::vector<GradCase> recurrent_cases() {
  return {
      {"rnn_pointwise_tanh", step_shapes({1, 1}), [](auto x) { return rnn_pointwise(x[0], x[1]); }},
      // |x0| >= 0.3 > |0.1 x1|: the sum stays away from relu's kink.
      GradCase{"rnn_pointwise_relu", step_shapes({1, 1}),
               [](auto x) { return rnn_pointwise(x[0], x[1] * 0.1, Nonlinearity::relu); }, Domain::away_from_zero}
          .partial_on_throw(earlier_ops_stay_recorded),
      {"lstm_pointwise", step_shapes({4, 1}), [](auto x) { return lstm_pointwise(x[0], x[1]); }},
      {"gru_pointwise", step_shapes({3, 3, 1}), [](auto x) { return gru_pointwise(x[0], x[1], x[2]); }},
      GradCase{"rnn_cell", cell_shapes(1, false), [](S x) { return rnn_cell(x[0], x[1], weights(x, 2)); }}
          .float32_within(1e-3, tanh_derivative_cancels),
      {"lstm_cell", cell_shapes(4, true), [](S x) {
         const LstmState s = lstm_cell(x[0], x[1], x[2], weights(x, 3));
         return concat({s.h, s.c}, 1);
       }},
      {"lstm_cell_projected", projected_lstm_shapes(false), [](S x) {
         const LstmState s = lstm_cell(x[0], x[1], x[2], projected_weights(x));
         return concat({s.h, s.c}, 1);
       }},
      {"gru_cell", cell_shapes(3, false), [](S x) { return gru_cell(x[0], x[1], weights(x, 2)); }},
      {"gru_cell_onnx", cell_shapes(3, false), [](S x) { return gru_cell(x[0], x[1], weights(x, 2), false); }},
      GradCase{"lstm_step_scan", cell_shapes(4, true, true), lstm_scan}
          .covers({"project", "scan"})
          .partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"gru_step_scan_backwards", cell_shapes(3, false, true), gru_scan}
          .covers({"project", "scan"})
          .partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"rnn_step_scan", cell_shapes(1, false, true), rnn_scan}
          .covers({"project", "scan"})
          .partial_on_throw(earlier_ops_stay_recorded),
      GradCase{"lstm_cell_written_scan_captured", written_cell_shapes(), captured_lstm_scan}
          .covers({"scan"})
          .partial_on_throw(earlier_ops_stay_recorded),
      // The fused layer direction; its second order is the scan above recorded again.
      {"fused_recurrence_lstm", cell_shapes(4, true, true),
       [](S x) { return fused_recurrence({}, x[0], weights(x, 3), x[1], x[2]); }},
      // Squared: the upstream gradient depends on the op's output, which its recorded
      // backward must treat as given (second order checks that).
      {"fused_recurrence_lstm_squared", cell_shapes(4, true, true), [](S x) {
         const Var out = fused_recurrence({}, x[0], weights(x, 3), x[1], x[2]);
         return out * out;
       }},
      {"fused_recurrence_lstm_reverse", cell_shapes(4, true, true),
       [](S x) { return fused_recurrence({.reverse = true}, x[0], weights(x, 3), x[1], x[2]); }},
      // The LSTM with its final cell state as a second output: the op's rule gets both
      // gradients (autodiff/record.hpp's record_outputs), or the cell state's and zeros
      // (the outputs' alone: test_nn_fused_recurrence.cpp, against the packed result).
      {"fused_recurrence_split_lstm_squared", cell_shapes(4, true, true), [](S x) {
         const FusedOutputs r = fused_recurrence_split({}, x[0], weights(x, 3), x[1], x[2]);
         const Var out = concat({r.outputs, unsqueeze(r.c_n, 0)}, 0);
         return out * out;
       }},
      // The projected LSTM: h' = (o * tanh(c')) W_hr^T of size P, c' of size H.
      {"fused_recurrence_split_lstm_projected_squared", projected_lstm_shapes(true), [](S x) {
         const FusedOutputs r = fused_recurrence_split({}, x[0], projected_weights(x), x[1], x[2]);
         return concat({reshape(r.outputs * r.outputs, {-1}), reshape(r.c_n, {-1})}, 0);
       }},
      {"fused_recurrence_split_lstm_projected_reverse", projected_lstm_shapes(true), [](S x) {
         const FusedOutputs r = fused_recurrence_split({.reverse = true}, x[0], projected_weights(x), x[1], x[2]);
         return concat({reshape(r.outputs, {-1}), reshape(r.c_n * r.c_n, {-1})}, 0);
       }},
      {"fused_recurrence_split_lstm_cell_only_reverse", cell_shapes(4, true, true), [](S x) {
         const FusedOutputs r = fused_recurrence_split({.reverse = true}, x[0], weights(x, 3), x[1], x[2]);
         return r.c_n * r.c_n;
       }},
      {"fused_recurrence_rnn_tanh_reverse", cell_shapes(1, false, true),
       [](S x) { return fused_recurrence({.kind = CellKind::rnn, .reverse = true}, x[0], weights(x, 2), x[1]); }},
      GradCase{"fused_recurrence_rnn_relu", cell_shapes(1, false, true),
               [](S x) {
                 return fused_recurrence({.kind = CellKind::rnn, .nonlinearity = Nonlinearity::relu}, x[0],
                                         weights(x, 2), x[1]);
               },
               Domain::away_from_zero},
      {"fused_recurrence_gru", cell_shapes(3, false, true),
       [](S x) { return fused_recurrence({.kind = CellKind::gru}, x[0], weights(x, 2), x[1]); }},
      {"fused_recurrence_gru_squared_reverse", cell_shapes(3, false, true), [](S x) {
         const Var out = fused_recurrence({.kind = CellKind::gru, .reverse = true}, x[0], weights(x, 2), x[1]);
         return out * out;
       }},
      {"fused_recurrence_gru_onnx", cell_shapes(3, false, true), [](S x) {
         return fused_recurrence({.kind = CellKind::gru, .linear_before_reset = false}, x[0], weights(x, 2), x[1]);
       }},
      {"fused_recurrence_gru_onnx_squared_reverse", cell_shapes(3, false, true), [](S x) {
         const Var out = fused_recurrence({.kind = CellKind::gru, .linear_before_reset = false, .reverse = true}, x[0],
                                          weights(x, 2), x[1]);
         return out * out;
       }},
      // Variable lengths: finished elements carry their state; second order runs the scan
      // with the same lengths.
      GradCase{"fused_recurrence_lstm_lengths_reverse", cell_shapes(4, true, true),
               [](S x) {
                 const Var out = fused_recurrence({.reverse = true, .lengths = some_lengths(x[0])}, x[0],
                                                  weights(x, 3), x[1], x[2]);
                 return out * out;
               }}
          .nan_exempt(padding_unread),
      GradCase{"fused_recurrence_lstm_lengths", cell_shapes(4, true, true),
               [](S x) { return fused_recurrence({.lengths = some_lengths(x[0])}, x[0], weights(x, 3), x[1], x[2]); }}
          .nan_exempt(padding_unread),
      GradCase{"fused_recurrence_rnn_lengths_reverse", cell_shapes(1, false, true),
               [](S x) {
                 return fused_recurrence({.kind = CellKind::rnn, .reverse = true, .lengths = some_lengths(x[0])}, x[0],
                                         weights(x, 2), x[1]);
               }}
          .nan_exempt(padding_unread),
      GradCase{"fused_recurrence_gru_lengths", cell_shapes(3, false, true),
               [](S x) {
                 return fused_recurrence({.kind = CellKind::gru, .lengths = some_lengths(x[0])}, x[0], weights(x, 2),
                                         x[1]);
               }}
          .nan_exempt(padding_unread),
      GradCase{"fused_recurrence_gru_onnx_lengths_reverse", cell_shapes(3, false, true),
               [](S x) {
                 return fused_recurrence(
                     {.kind = CellKind::gru, .linear_before_reset = false, .reverse = true, .lengths = some_lengths(x[0])},
                     x[0], weights(x, 2), x[1]);
               }}
          .nan_exempt(padding_unread)
  };
}

}  // namespace recur::testing
