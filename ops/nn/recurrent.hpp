#pragma once
// Sequence layers RNN, LSTM and GRU, with several layers, both directions and
// batch-first or time-first inputs. Weight layout, names and gate
// order are PyTorch's (torch.nn.RNN/LSTM/GRU), so weights move between the two:
//   weight_ih_l{k}[_reverse]  [G*H, I_k]   weight_hh_l{k}[_reverse]  [G*H, H]
//   bias_ih_l{k}[_reverse]    [G*H]        bias_hh_l{k}[_reverse]    [G*H]
//   weight_hr_l{k}[_reverse]  [P, H]       (an LSTM with proj_size P; weight_hh is then [4H, P])
// with G = 1 (RNN), 4 (LSTM: input, forget, cell, output) or 3 (GRU: reset, update, new),
// I_0 = input_size and I_k = D*H above (D = 2 when bidirectional).
//
// Each layer and direction is one fused op over all steps (fused_recurrence.hpp: one gemm
// for the input projection, two per step (three for ONNX's GRU form), one for each weight
// gradient; the same function as the scan of cells.hpp, which it is tested against and
// which its create_graph backward records). A layer asked for recomputation
// (`checkpoint`) runs as one scan over time: x W_ih^T + b_ih is one matrix
// product over all steps made before the scan, a step is h W_hh^T and one fused
// elementwise op (ops/nn/pointwise.hpp). Either way the reverse direction's outputs come
// back in time order, so output[t] holds both directions' states after reading input[t].
//
// The three take one call, layer(input, RecurrentState{h, c}) -> RecurrentOutput, so code
// generic over them (a template, or a `const RecurrentLayer&`) needs no per-type branch;
// PyTorch's positional calls, rnn(x, h0) and lstm(x, h0, c0), forward to it.
#include <concepts>
#include <cstdint>
#include <string_view>
#include <vector>

#include <recur/autodiff/var.hpp>
#include <recur/core/random.hpp>
#include <recur/ops/nn/cell_parameters.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::nn {

struct RecurrentOptions {
  std::int64_t input_size = 0;
  std::int64_t hidden_size = 0;
  std::int64_t num_layers = 1;
  // LSTM only: h projected to proj_size < hidden_size features by weight_hr_l{k} [P, H]
  // (PyTorch's proj_size): h, h_n and each direction's output are of size P, c of size H,
  // weight_hh [4H, P]. 0: no projection. ValueError otherwise, at construction.
  std::int64_t proj_size = 0;
  bool bias = true;
  bool batch_first = false;       // input and output [B, T, *] instead of [T, B, *]
  bool bidirectional = false;
  Nonlinearity nonlinearity = Nonlinearity::tanh;  // RNN only
  bool linear_before_reset = true;  // GRU only: PyTorch's form (true) or ONNX's default (false), cells.hpp
  DType dtype = DType::float32;
  Checkpoint checkpoint{};        // scan's recomputation, per layer and direction (runs the scan path)
  std::int64_t truncate_gradient = -1;  // scan's: -1 or k >= 0 (ValueError otherwise, at construction)
};

// The state a layer starts from and ends in, the same for the three layers so that
// generic code can carry it: h [D*num_layers, B, H], and c (LSTM only) in the same layout.
// Undefined members are zeros.
struct RecurrentState {
  Var h{};
  Var c{};  // LSTM only: RNN and GRU reject a defined c (ValueError naming 'c0')
};

struct RecurrentOutput {
  Var output;  // [T, B, D*H] (batch_first: [B, T, D*H]): the last layer at every step
  Var h_n;     // [D*num_layers, B, H]: final hidden state of each layer and direction
  Var c_n;     // LSTM only: final cell state, same layout
  // (With proj_size P, output and h_n have P in place of H; c_n keeps H.)
  // The final state, to start the next chunk of a sequence from.
  RecurrentState state() const { return {h_n, c_n}; }
};

// What RNN, LSTM and GRU share: the parameters of every layer and direction, the checks
// of the arguments, the loop over layers and directions, and the call they all take.
class RecurrentLayer : public RecurrentModule {
 public:
  const RecurrentOptions& options() const { return options_; }
  CellKind kind() const { return kind_; }
  // The parameters of layer `layer`, direction 0 (forward) or 1 (reverse).
  const CellParameters& weights(std::int64_t layer, std::int64_t direction = 0) const;
  std::int64_t num_directions() const { return options_.bidirectional ? 2 : 1; }
  // The size of h and of each direction's output: proj_size when there is one, else hidden_size.
  std::int64_t h_size() const { return options_.proj_size > 0 ? options_.proj_size : options_.hidden_size; }

  // The call common to the three layers, for code generic over them (a template, or a
  // `const RecurrentLayer&`):
  //   RecurrentOutput out = layer(x);              // from zeros
  //   out = layer(x_next, out.state());             // carries h (and c for an LSTM) on
  // Shapes: see RecurrentOutput; state.h is checked as 'h0' and state.c as 'c0'.
  // Variable-length sequences, as PyTorch's packed sequences and ONNX's sequence_lens:
  //   out = layer(x, {}, lengths);   // lengths: int64 [B] tensor or {5, 3, ...}
  // sequence b is its first lengths[b] steps (0 <= lengths[b] <= T): out.output is zero
  // past them, h_n and c_n are each layer's state after the sequence's last step, and the
  // reverse direction reads each sequence reversed within its own length. Every layer
  // and direction runs as one op still (fused or, with checkpoints, scan). Not with
  // truncate_gradient >= 0 (ValueError).
  // ShapeError / DTypeError / ValueError naming the layer and the argument, before
  // anything is recorded.
  RecurrentOutput operator()(const Var& input, const RecurrentState& state = {},
                             const SequenceLengths& lengths = {}) const;

 protected:
  RecurrentLayer(CellKind kind, const RecurrentOptions& options, Generator& gen);

 private:
  // The checked lengths (empty when not given).
  std::vector<std::int64_t> check(const Var& input, const RecurrentState& state, const SequenceLengths& lengths) const;
  std::string_view name_;
  CellKind kind_;
  RecurrentOptions options_;
  std::vector<CellParameters> weights_;  // layer * num_directions + direction
};

// RNN, LSTM and GRU: the common call above, and PyTorch's positional one,
// rnn(input, h0) / lstm(input, h0, c0) / gru(input, h0), which forwards to it.
template <CellKind Kind>
class LayerOf : public RecurrentLayer {
 public:
  LayerOf(const RecurrentOptions& options, Generator& gen) : RecurrentLayer(Kind, options, gen) {}
  using RecurrentLayer::operator();
  RecurrentOutput operator()(const Var& input, const Var& h0) const {
    return (*this)(input, RecurrentState{h0, Var()});
  }
  // c0 exactly a Var, so that lstm(x, {}, lengths) is the common call, not this one.
  template <std::same_as<Var> C>
  RecurrentOutput operator()(const Var& input, const Var& h0, const C& c0) const
    requires(Kind == CellKind::lstm)
  {
    return (*this)(input, RecurrentState{h0, c0});
  }
};

using RNN = LayerOf<CellKind::rnn>;
using LSTM = LayerOf<CellKind::lstm>;
using GRU = LayerOf<CellKind::gru>;

}  // namespace recur::nn
