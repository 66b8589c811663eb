#pragma once
// Internal to recur's ONNX export: an LSTM cell's elementwise equations as ONNX nodes, in
// PyTorch's gate order, for both places that write them (a traced step's lstm_pointwise,
// export_step_cells.cpp, and a projected LSTM's Scan body, export_projected_lstm.cpp):
//   c' = sig(f) c + sig(i) tanh(g),   m = sig(o) tanh(c')   (m is h' without a projection)
#include <string>
#include <vector>

namespace recur::onnx_io::detail {

struct LstmEquationOutputs {
  std::string c_next, m;
};

// gates: the four gate blocks' names (i, f, g, o); c: the cell state's. `node(type, inputs,
// hint)` adds one node and returns the name of its output.
template <class Node>
LstmEquationOutputs lstm_equations(Node&& node, const std::vector<std::string>& gates, const std::string& c) {
  const std::string i = node("Sigmoid", {gates[0]}, "input_gate"), f = node("Sigmoid", {gates[1]}, "forget_gate"),
                    g = node("Tanh", {gates[2]}, "cell_gate"), o = node("Sigmoid", {gates[3]}, "output_gate");
  const std::string c_next = node("Add", {node("Mul", {f, c}, "kept"), node("Mul", {i, g}, "written")}, "c");
  return {c_next, node("Mul", {o, node("Tanh", {c_next}, "c_tanh")}, "h")};
}

}  // namespace recur::onnx_io::detail
