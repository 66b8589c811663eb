#pragma once
// A whole layer direction of an Elman RNN, an LSTM or a GRU as one op on the tape: the same
// function as running the cell through scan (ops/nn/scan_recurrence.cpp does that), with a
// forward and backward written as loops over time around the BLAS calls, the way cuDNN
// runs a layer. What that buys over a scan of per-step ops:
//  - the input projection x W_ih^T is one gemm over all steps, and its buffer becomes the
//    gate activations in place, which backward turns into the gate gradients in place;
//  - the weight gradients dW_hh, dW_ih and the biases' are one gemm (or sum) each over all
//    steps, instead of a thin K = B gemm per step plus an add;
//  - the tape keeps one node, and only what backward needs: for an LSTM the activations
//    and the cell state at every ceil(sqrt(T))-th step (backward replays the others a
//    segment at a time, bit for bit, from the activations), for a GRU the activations and
//    (PyTorch's form) h W_hn^T + b_hn at every step, for an RNN nothing but its output. A
//    second backward through the node runs its forward again first.
// A GRU step makes h W_hh^T in one gemm in PyTorch's form (linear_before_reset); in ONNX's
// default form the candidate's product (r h) W_hn^T waits for the reset gate, so it is a
// second gemm, and backward a third (r h's gradient dn W_hn) before the reset gate's.
// Under create_graph the backward is the scan of cells.hpp recorded op by op and
// differentiated again, so gradients of gradients work as for every op.
#include <cstdint>

#include <recur/autodiff/var.hpp>
#include <recur/ops/nn/cells.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::nn {

struct FusedRecurrenceOptions {
  CellKind kind = CellKind::lstm;
  Nonlinearity nonlinearity = Nonlinearity::tanh;  // RNN only
  bool linear_before_reset = true;  // GRU only: PyTorch's form (true) or ONNX's default (false), cells.hpp
  bool reverse = false;                // run from the last step to the first
  // scan's: backpropagate through the last k >= 0 steps only; -1: through all of them
  // (ValueError below -1).
  std::int64_t truncate_gradient = -1;
  // Per batch element, the steps it runs (scan's SequenceLengths, int64): element b runs
  // the times t < lengths[b] (under reverse from lengths[b] - 1 down to 0) and keeps its
  // state unchanged at the others. Not with truncate_gradient >= 0 (ValueError).
  SequenceLengths lengths{};
};

// x [T, B, I] (T >= 1), the cell's weights in PyTorch's layout (biases may be undefined),
// h0 [B, H] and, for an LSTM, c0 [B, H] (ignored otherwise). Returns, in time order
// whatever the direction,
//   RNN, GRU: [T, B, H], h_t at every step;
//   LSTM:     [T + 1, B, H], h_t at rows 0..T-1 and the final cell state at row T.
// An LSTM's w_hr [P, H] (CellWeights::w_hr, PyTorch's proj_size) projects h: h0 and the
// output rows are [B, P], c0 and c_n [B, H]; such a direction takes fused_recurrence_split
// (ValueError from fused_recurrence, whose row T would be c).
// With lengths, an element's rows at the times it does not run hold its carried state
// (forward: the state at its last step; reverse: h0), so the last loop step's row
// (T - 1, or 0 under reverse) is every element's final state; the layers zero the others.
// ShapeError / DTypeError naming the argument and the shapes, ValueError for a
// truncate_gradient below -1, before anything is recorded.
Var fused_recurrence(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w, const Var& h0,
                     const Var& c0 = Var());

// The same op with an LSTM's final cell state as an output of its own (an op with two
// outputs, autodiff/record.hpp's record_outputs) instead of row T: `outputs` [T, B, H] is
// fused_recurrence's rows 0..T-1 and `c_n` [B, H] its row T (undefined for an RNN or GRU,
// whose result is fused_recurrence's). What the layers use: a loss over the outputs hands
// its gradient to the op as it is, where a slice of the packed rows would first copy it
// into a zero-padded [T + 1, B, H] buffer. Same arguments and errors.
struct FusedOutputs {
  Var outputs, c_n;
};
FusedOutputs fused_recurrence_split(const FusedRecurrenceOptions& options, const Var& x, const CellWeights& w,
                                    const Var& h0, const Var& c0 = Var());

}  // namespace recur::nn
