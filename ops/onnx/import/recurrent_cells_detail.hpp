#pragma once
// One direction of an ONNX RNN, GRU or LSTM node in ONNX's own equations and gate order,
// run on recur's scan (the JAX face, with its per-element `lengths`): the path for what the
// fused layer ops cannot express (other activations, clip, input_forget, peepholes). Every
// step is recur's differentiable ops, so gradients are exact, to any order.
#include <optional>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/ops/nn/cells.hpp>
#include <recur/ops/onnx/import/recurrent_activations_detail.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::onnx_io::detail {

struct OnnxCell {
  nn::CellKind kind = nn::CellKind::rnn;
  std::vector<Activation> activations{};  // this direction's f (RNN); f, g (GRU); f, g, h (LSTM)
  std::optional<double> clip{};           // bounds every activation's input to [-clip, clip]
  bool input_forget = false;              // LSTM: the forget gate is 1 - the input gate
  bool linear_before_reset = false;       // GRU
};

// One direction's weights in ONNX's layout and gate order (LSTM i o f c, GRU z r h).
struct DirectionWeights {
  Var w{}, r{};    // [G*H, I], [G*H, H]
  Var wb{}, rb{};  // [G*H] each; undefined without the node's B
  Var p{};         // LSTM peepholes [3*H] (i, o, f); undefined without the node's P
};

// What a direction gives: y [T, B, H] (zero at each element's steps past its length), and
// the states after each element's last step (c for LSTM only).
struct DirectionStates {
  Var y{}, h{}, c{};
};

// x [T, B, I], h0 and c0 [B, H] (c0 for LSTM only); reverse runs from each element's last
// step to its first, as ONNX's reverse direction does.
DirectionStates scan_direction(const OnnxCell& cell, const Var& x, const DirectionWeights& w, const Var& h0,
                               const Var& c0, bool reverse, const SequenceLengths& lengths);

}  // namespace recur::onnx_io::detail
