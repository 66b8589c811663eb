#pragma once
// ONNX export of the sequence layers: an nn::RNN, nn::LSTM or nn::GRU stack (any number of
// layers, either direction, batch_first or not) written as an ONNX model of opset 14 with
// one RNN / LSTM / GRU node per layer, its weights as initializers in ONNX's layout:
//   W [D, G*H, I_k], R [D, G*H, H], B [D, 2*G*H] = (W_b, R_b), direction 0 forward, 1 reverse,
// the gates reordered from PyTorch's (recur's) to ONNX's: LSTM i f g o -> i o f c,
// GRU r z n -> z r h (with linear_before_reset = 1 for PyTorch's form, 0 for ONNX's),
// RNN's activation Tanh or Relu. Between layers, Transpose and Reshape turn a node's Y
// [T, D, B, H] into the next one's X [T, B, D*H].
//
//   recur::onnx_io::save("lstm.onnx", lstm, {.initial_state = true, .sequence_lens = true});
//
// The model's inputs and outputs have recur's shapes and names (T and B symbolic):
//   input          [T, B, I] ([B, T, I] when batch_first), the layer's dtype
//   h0, c0         [D*num_layers, B, H] (initial_state; c0 LSTM only), else zeros
//   sequence_lens  int32 [B] (sequence_lens): the call's `lengths`, ONNX's semantics are
//                  the layers' (outputs past a length zero, final states at its last step)
//   output         [T, B, D*H] ([B, T, D*H]), h_n and c_n (LSTM) [D*num_layers, B, H]
// Every model passes onnx::checker::check_model before it is returned or written.
#include <filesystem>
#include <string>

#include <onnx/onnx_pb.h>

#include <recur/ops/nn/recurrent.hpp>

namespace recur::onnx_io {

// Every member has a default: designated initializers may leave any out.
struct LayerExportOptions {
  bool initial_state = false;  // graph inputs h0 (and c0); without them the nodes start from zeros
  bool sequence_lens = false;  // graph input sequence_lens, fed to every node
  std::string graph_name = "recur";
};

// The checked model (ValueError if onnx::checker rejects it, which would be a bug here).
::onnx::ModelProto layer_model(const nn::RecurrentLayer& layer, const LayerExportOptions& options = {});

// layer_model(layer, options) written to `path`, atomically (IOError naming the path).
void save(const std::filesystem::path& path, const nn::RecurrentLayer& layer, const LayerExportOptions& options = {});

}  // namespace recur::onnx_io
