#pragma once
// One step of an Elman RNN, an LSTM and a GRU as functions of Vars, with PyTorch's
// weight layout and equations (torch.nn.RNNCell, LSTMCell, GRUCell):
//   w_ih [G*H, I], w_hh [G*H, H], b_ih and b_hh [G*H] (undefined Vars: no bias),
//   x [B, I], h and c [B, H]; G = 1, 4 (i, f, g, o) or 3 (r, z, n). An LSTM may project
//   h: w_hr [P, H] (P < H), h [B, P], w_hh [4H, P], h' = (o * tanh(c')) w_hr^T.
// Each is two matrix products and the fused elementwise op of ops/nn/pointwise.hpp.
// The *_step forms take x's projection already made (the sequence layers make it once
// for all steps) and are what the layers' scan runs.
#include <string_view>

#include <recur/autodiff/var.hpp>
#include <recur/ops/nn/cell_kind.hpp>
#include <recur/ops/nn/pointwise.hpp>

namespace recur::nn {

struct CellWeights {
  Var w_ih{}, w_hh{}, b_ih{}, b_hh{};  // `{}`: designated initializers may leave the biases out
  Var w_hr{};                          // a projected LSTM's [P, H] (PyTorch's weight_hr), else undefined
};

struct LstmState {
  Var h, c;
};

Var rnn_cell(const Var& x, const Var& h, const CellWeights& w, Nonlinearity act = Nonlinearity::tanh);
LstmState lstm_cell(const Var& x, const Var& h, const Var& c, const CellWeights& w);
// linear_before_reset: PyTorch's GRU (true: the reset gate scales h W_hn^T + b_hn) or
// ONNX's default (false: it scales h, cand = tanh(x_n + (r h) W_hn^T + b_hn)).
Var gru_cell(const Var& x, const Var& h, const CellWeights& w, bool linear_before_reset = true);

// x W^T (+ b): the projection of inputs [N, I] by a weight [G*H, I] and bias [G*H].
Var project(const Var& x, const Var& w, const Var& b = Var());

// One step from xproj = x W_ih^T + b_ih [B, G*H]; b_hh may be undefined (for RNN and LSTM
// a caller can fold it into xproj; GRU needs it apart, inside the reset gate's product).
Var rnn_step(const Var& xproj, const Var& h, const Var& w_hh, const Var& b_hh, Nonlinearity act);
// With w_hr [P, H] (PyTorch's proj_size), h' = (o * tanh(c')) w_hr^T is of size P.
LstmState lstm_step(const Var& xproj, const Var& h, const Var& c, const Var& w_hh, const Var& b_hh,
                    const Var& w_hr = Var());
Var gru_step(const Var& xproj, const Var& h, const Var& w_hh, const Var& b_hh, bool linear_before_reset = true);

namespace detail {
// How the checked arguments are named and laid out: x [B, I], or [T >= 1, B, I] when
// `sequence`; h (and c) [B, H].
struct CellArgumentNames {
  bool sequence = false;
  std::string_view h = "h", c = "c";
};
// The arguments of a cell with `gates` gates in PyTorch's layout (c only when given, biases
// optional), checked before anything is recorded: ValueError for an undefined one,
// ShapeError naming `op` and every argument's shape, DTypeError for mixed dtypes.
void check_cell_arguments(std::string_view op, std::int64_t gates, const Var& x, const Var& h, const Var* c,
                          const CellWeights& w, const CellArgumentNames& names);
}  // namespace detail

}  // namespace recur::nn
