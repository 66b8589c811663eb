// One layer direction as one scan over time of the per-step cells (scan_recurrence.hpp).
#include <recur/ops/nn/scan_recurrence.hpp>

#include <optional>
#include <vector>

#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/nn/sequence_lengths_detail.hpp>
#include <recur/ops/scan/theano.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn::detail {
namespace {

// x W_ih^T + b_ih for every step at once: [T, B, G*H]. RNN and LSTM add b_hh here too
// (it only shifts the pre-activations), which saves an add per step; GRU's b_hh sits
// inside the reset gate's product and stays in the step.
Var input_projection(CellKind kind, const Var& input, const CellWeights& w) {
  Var bias = w.b_ih;
  if (kind != CellKind::gru && w.b_hh.defined()) bias = bias.defined() ? bias + w.b_hh : w.b_hh;
  const std::int64_t steps = input.size(0), batch = input.size(1);
  const Var flat = reshape(input, {steps * batch, input.size(2)});
  return reshape(project(flat, w.w_ih, bias), {steps, batch, w.w_ih.size(0)});
}

// The step function for scan: (xproj_t, h[, c], w_hh[, b_hh][, w_hr]) -> h'[, c'].
StepFn step_function(CellKind kind, const RecurrentOptions& options, bool step_bias, bool projected) {
  const Nonlinearity act = options.nonlinearity;
  const bool linear_before_reset = options.linear_before_reset;
  switch (kind) {
    case CellKind::rnn:
      return [=](std::span<const Var> a) -> StepResult {
        return rnn_step(a[0], a[1], a[2], step_bias ? a[3] : Var(), act);
      };
    case CellKind::lstm:
      return [projected](std::span<const Var> a) -> StepResult {
        const LstmState s = lstm_step(a[0], a[1], a[2], a[3], Var(), projected ? a[4] : Var());
        return {s.h, s.c};
      };
    case CellKind::gru: break;
  }
  return [=](std::span<const Var> a) -> StepResult {
    return gru_step(a[0], a[1], a[2], step_bias ? a[3] : Var(), linear_before_reset);
  };
}

// outputs[T - 1 - t] for every t: the reverse scan's outputs in time order.
Var reversed_in_time(const Var& outputs) {
  const std::int64_t steps = outputs.size(0);
  return take(outputs, arange(static_cast<double>(steps - 1), -1.0, -1.0, DType::int64), 0);
}

}  // namespace

DirectionOutput scan_direction(CellKind kind, const RecurrentOptions& options, const Var& input, const CellWeights& w,
                               const Var& h0, const Var& c0, bool reverse, const std::vector<std::int64_t>& lengths) {
  const bool step_bias = kind == CellKind::gru && w.b_hh.defined();
  std::vector<Var> non_sequences{w.w_hh};
  if (step_bias) non_sequences.push_back(w.b_hh);
  if (w.w_hr.defined()) non_sequences.push_back(w.w_hr);
  std::vector<OutputInfo> outputs_info{h0};
  if (kind == CellKind::lstm) outputs_info.emplace_back(c0);
  const ScanResult r = scan(step_function(kind, options, step_bias, w.w_hr.defined()),
                            {.sequences = {input_projection(kind, input, w)},
                             .outputs_info = std::move(outputs_info),
                             .non_sequences = std::move(non_sequences),
                             .n_steps = std::nullopt,  // as many as the sequence has
                             .truncate_gradient = options.truncate_gradient,
                             .go_backwards = reverse,
                             .checkpoint = options.checkpoint,
                             .lengths = lengths.empty() ? SequenceLengths() : SequenceLengths(lengths)});
  auto final_state = [&](std::size_t i, const Var& init) {
    return lengths.empty() ? index(r[i], 0, r.steps - 1) : state_after_lengths(r[i], init, lengths, reverse);
  };
  DirectionOutput out;
  out.outputs = reverse ? reversed_in_time(r[0]) : r[0];
  out.h_n = final_state(0, h0);
  if (kind == CellKind::lstm) out.c_n = final_state(1, c0);
  return out;
}

FusedOutputs scan_recurrence_split(const FusedRecurrenceOptions& o, const Var& input, const CellWeights& w,
                                   const Var& h0, const Var& c0) {
  RecurrentOptions options;
  options.nonlinearity = o.nonlinearity;
  options.linear_before_reset = o.linear_before_reset;
  options.truncate_gradient = o.truncate_gradient;
  const std::vector<std::int64_t> lengths = checked_lengths("fused_recurrence", o.lengths, input.shape(), 0, 1);
  const DirectionOutput r = scan_direction(o.kind, options, input, w, h0, c0, o.reverse, lengths);
  // The fused op's rows past an element's length: its carried state, h0 under reverse.
  const Var outputs = lengths.empty() ? r.outputs : fill_past_lengths(r.outputs, lengths, o.reverse ? h0 : r.h_n);
  return {outputs, r.c_n};
}

Var scan_recurrence(const FusedRecurrenceOptions& o, const Var& input, const CellWeights& w, const Var& h0,
                    const Var& c0) {
  const FusedOutputs r = scan_recurrence_split(o, input, w, h0, c0);
  if (!r.c_n.defined()) return r.outputs;
  return concat({r.outputs, reshape(r.c_n, {1, r.c_n.size(0), r.c_n.size(1)})}, 0);
}

}  // namespace recur::nn::detail
