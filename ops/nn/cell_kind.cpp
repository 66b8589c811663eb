#include <recur/ops/nn/cell_kind.hpp>

#include <array>

namespace recur::nn {
namespace {

constexpr std::array<std::string_view, 1> kRnnGates{"h"};
constexpr std::array<std::string_view, 4> kLstmGates{"input", "forget", "cell", "output"};  // i f g o
constexpr std::array<std::string_view, 3> kGruGates{"reset", "update", "new"};              // r z n
constexpr std::array<std::int64_t, 1> kRnnOnnx{0};
constexpr std::array<std::int64_t, 4> kLstmOnnx{0, 3, 1, 2};  // ONNX i o f c
constexpr std::array<std::int64_t, 3> kGruOnnx{1, 0, 2};      // ONNX z r h
constexpr std::array<std::string_view, 1> kRnnActivations{"Tanh"};
constexpr std::array<std::string_view, 3> kLstmActivations{"Sigmoid", "Tanh", "Tanh"};
constexpr std::array<std::string_view, 2> kGruActivations{"Sigmoid", "Tanh"};

const CellDescriptor kDescriptors[] = {
    {CellKind::rnn, "rnn", "RNN", "RNNCell", "rnn_cell", kRnnGates, kRnnOnnx, kRnnActivations, false, false},
    {CellKind::lstm, "lstm", "LSTM", "LSTMCell", "lstm_cell", kLstmGates, kLstmOnnx, kLstmActivations, true, true},
    {CellKind::gru, "gru", "GRU", "GRUCell", "gru_cell", kGruGates, kGruOnnx, kGruActivations, false, false},
};

}  // namespace

const CellDescriptor& describe(CellKind kind) { return kDescriptors[static_cast<int>(kind)]; }

std::vector<std::int64_t> CellDescriptor::pytorch_gates_in_onnx() const {
  std::vector<std::int64_t> inverse(onnx_gates.size());
  for (std::size_t k = 0; k < onnx_gates.size(); ++k) inverse[static_cast<std::size_t>(onnx_gates[k])] = static_cast<std::int64_t>(k);
  return inverse;
}

std::vector<CellParameterSpec> cell_parameter_specs(CellKind kind, const CellSizes& sizes, bool bias) {
  const std::int64_t rows = describe(kind).gate_count() * sizes.hidden;
  std::vector<CellParameterSpec> specs{{"weight_ih", {rows, sizes.input}}, {"weight_hh", {rows, sizes.h()}}};
  if (bias) {
    specs.push_back({"bias_ih", {rows}});
    specs.push_back({"bias_hh", {rows}});
  }
  if (sizes.proj > 0) specs.push_back({"weight_hr", {sizes.proj, sizes.hidden}});
  return specs;
}

}  // namespace recur::nn
