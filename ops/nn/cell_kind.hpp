#pragma once
// What recur knows of each recurrent cell kind, written once: every layer, cell module,
// the fused op, the ONNX import and the ONNX export read it here (docs/architecture.md,
// "Add a cell kind"). The arithmetic of a kind is its kernel in
// ops/kernels/cell_kernels_detail.hpp.
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <recur/core/shape.hpp>

namespace recur::nn {

// Which cell: Elman RNN (1 gate), LSTM (4 gates) or GRU (3 gates).
enum class CellKind { rnn, lstm, gru };

struct CellDescriptor {
  CellKind kind;
  std::string_view name;      // "lstm": attributes and messages
  std::string_view layer;     // "LSTM": the sequence layer (recurrent.hpp), and ONNX's op type
  std::string_view cell;      // "LSTMCell": the one-step module (cell_modules.hpp)
  std::string_view function;  // "lstm_cell": the one-step function (cells.hpp)
  // Blocks of H rows in w_ih, w_hh and the biases, in PyTorch's order.
  std::span<const std::string_view> gates;
  // ONNX's layout: its gate block k is PyTorch's block onnx_gates[k].
  std::span<const std::int64_t> onnx_gates;
  // The activations ONNX's op uses unless its node says otherwise.
  std::span<const std::string_view> onnx_activations;
  bool cell_state;  // c beside h (LSTM)
  bool projection;  // h may be projected to fewer features (PyTorch's proj_size: LSTM)

  std::int64_t gate_count() const { return static_cast<std::int64_t>(gates.size()); }
  // PyTorch's block of each of ONNX's gate blocks, inverted: ONNX's block of PyTorch's k.
  std::vector<std::int64_t> pytorch_gates_in_onnx() const;
};

const CellDescriptor& describe(CellKind kind);
constexpr std::string_view name_of(CellKind k) { return k == CellKind::rnn ? "rnn" : k == CellKind::lstm ? "lstm" : "gru"; }

// A cell's sizes: input I, hidden H and, for a projected LSTM, P < H (0: none; h is then of
// size H).
struct CellSizes {
  std::int64_t input = 0, hidden = 0, proj = 0;
  std::int64_t h() const { return proj > 0 ? proj : hidden; }  // the size of h (and of each output)
};

// One parameter of a cell: PyTorch's name (without the layer suffix) and shape.
struct CellParameterSpec {
  std::string name;
  Shape shape;
};
// A cell's parameters in PyTorch's names and registration order: weight_ih [G*H, I],
// weight_hh [G*H, h], then with `bias` bias_ih and bias_hh [G*H], then with a projection
// weight_hr [P, H].
std::vector<CellParameterSpec> cell_parameter_specs(CellKind kind, const CellSizes& sizes, bool bias);

}  // namespace recur::nn
