#pragma once
// Fused ops for the elementwise part of one recurrent step: what is left of a cell once
// its matrix products are done. Each is one node on the tape (instead of a dozen), with a
// backward written out by hand as one loop; under create_graph the backward is built from
// recur's ops, so gradients of gradients work. Gate order is PyTorch's.
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/kernels/nonlinearity.hpp>

namespace recur::nn {

// act(xproj + hproj), both [B, H] (no broadcasting).
Tensor rnn_pointwise(const Tensor& xproj, const Tensor& hproj, Nonlinearity act = Nonlinearity::tanh);
Var rnn_pointwise(const Var& xproj, const Var& hproj, Nonlinearity act = Nonlinearity::tanh);

// LSTM: gates [B, 4H] (pre-activations of input, forget, cell and output gates, i.e.
// x W_ih^T + b_ih + h W_hh^T + b_hh) and the cell state c [B, H] give [B, 2H] =
// concat(h', c') with c' = sigmoid(f) c + sigmoid(i) tanh(g) and h' = sigmoid(o) tanh(c').
Tensor lstm_pointwise(const Tensor& gates, const Tensor& c);
Var lstm_pointwise(const Var& gates, const Var& c);

// GRU: xproj = x W_ih^T + b_ih and hproj = h W_hh^T + b_hh, both [B, 3H] (reset, update,
// new), and h [B, H] give h' [B, H]:
//   r = sigmoid(x_r + h_r), z = sigmoid(x_z + h_z), n = tanh(x_n + r h_n), h' = (1 - z) n + z h.
Tensor gru_pointwise(const Tensor& xproj, const Tensor& hproj, const Tensor& h);
Var gru_pointwise(const Var& xproj, const Var& hproj, const Var& h);

}  // namespace recur::nn
