#pragma once
// Internal to recur's ONNX export of the sequence layers (export_layers.cpp): a layer of an
// LSTM with a projection (proj_size), which ONNX's LSTM operator cannot hold, written as
// the ops of its equations: one ONNX Scan per direction whose body is the cell,
//   gates = x W_ih^T + h W_hh^T + (b_ih + b_hh),  i, f, g, o = split(gates)  (PyTorch's order)
//   c' = sig(f) c + sig(i) tanh(g),  h' = (sig(o) tanh(c')) W_hr^T
// reading the layer's weights as initializers of the outer graph.
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

#include <recur/ops/nn/recurrent.hpp>

namespace recur::onnx_io::detail {

struct LayerOutputNames {
  std::string y;    // [T, B, D*P]: both directions' h side by side
  std::string y_h;  // [D, B, P]
  std::string y_c;  // [D, B, H]
};

// Layer k of `rnn` (proj_size > 0) reading x [T, B, I_k] and, when not empty, h0 [D, B, P]
// and c0 [D, B, H] (zeros otherwise); writes its nodes and initializers into `graph` under
// names ending in _l{k}.
LayerOutputNames add_projected_lstm_layer(::onnx::GraphProto& graph, const nn::RecurrentLayer& rnn, std::int64_t k,
                                          const std::string& x, const std::string& h0, const std::string& c0);

}  // namespace recur::onnx_io::detail
