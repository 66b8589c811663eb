#pragma once
// Internal to recur's ONNX export of the sequence layers: one layer's weights in the
// layout of ONNX's RNN, LSTM and GRU operators (export_layers.hpp).
#include <cstdint>

#include <recur/ops/nn/recurrent.hpp>

namespace recur::onnx_io::detail {

struct OnnxLayerWeights {
  Tensor w, r, b;  // [D, G*H, I], [D, G*H, H], [D, 2*G*H] (b undefined without biases)
};

// Layer `layer` of `rnn` (all its directions), the gate blocks reordered to ONNX's.
OnnxLayerWeights onnx_layer_weights(const nn::RecurrentLayer& rnn, std::int64_t layer);

}  // namespace recur::onnx_io::detail
