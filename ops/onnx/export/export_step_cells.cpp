// The cells' fused elementwise ops (ops/nn/pointwise.hpp), which nn::RNNCell, LSTMCell and
// GRUCell and the cell functions of ops/nn/cells.hpp record, as the ONNX ops of their
// equations in the body of an exported scan.
#include <recur/ops/nn/pointwise.hpp>
#include <recur/ops/onnx/export/export_lstm_equations_detail.hpp>
#include <recur/ops/onnx/export/export_op_view_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

// The gate blocks of input `i` [B, gates*H] along axis 1, in PyTorch's order.
std::vector<std::string> gate_blocks(const OpView& v, std::size_t i, std::int64_t gates, const std::string& hint) {
  if (batch_factors(v.graph.trace, v.graph.batch, v.op.inputs[i]).at(1) != 0)  // the split sizes are fixed
    fail<ValueError>(v.graph.op, "op '", v.op.name, "' (node ", v.op.node, ") has its gates along the batch axis "
                     "(option 'batch_axis'): the cells' batch is axis 0");
  std::vector<std::string> blocks;
  for (std::int64_t k = 0; k < gates; ++k) blocks.push_back(v.temp(hint + std::to_string(k)));
  const Ints sizes(static_cast<std::size_t>(gates), v.x(i).size(1) / gates);
  set_attribute(add_node(v.graph.body, "Split", {v.in(i), v.ints(sizes, hint + "_sizes")}, blocks,
                         v.graph.names.unique("node_" + blocks[0])),
                "axis", std::int64_t{1});
  return blocks;
}

// act(xproj + hproj).
void rnn_pointwise(const OpView& v) {
  const bool tanh = v.attribute<std::string>("nonlinearity") == name_of(nn::Nonlinearity::tanh);
  v.node(tanh ? "Tanh" : "Relu", {v.step("Add", {v.in(0), v.in(1)}, "sum")});
}

// gates [B, 4H] (i f g o), c [B, H] -> concat(h', c'): c' = sig(f) c + sig(i) tanh(g),
// h' = sig(o) tanh(c').
void lstm_pointwise(const OpView& v) {
  auto node = [&](const std::string& type, const std::vector<std::string>& in, const std::string& hint) {
    return v.step(type, in, hint);
  };
  const LstmEquationOutputs next = lstm_equations(node, gate_blocks(v, 0, 4, "gate"), v.in(1));
  set_attribute(v.node("Concat", {next.m, next.c_next}), "axis", std::int64_t{1});
}

// xproj, hproj [B, 3H] (r z n), h [B, H] -> h' = n + z (h - n): r = sig(x_r + h_r),
// z = sig(x_z + h_z), n = tanh(x_n + r h_n) (PyTorch's form; ONNX's other form is
// recorded from plain ops, cells.cpp).
void gru_pointwise(const OpView& v) {
  const std::vector<std::string> x = gate_blocks(v, 0, 3, "x_gate"), hp = gate_blocks(v, 1, 3, "h_gate");
  const std::string r = v.step("Sigmoid", {v.step("Add", {x[0], hp[0]}, "r_sum")}, "reset_gate");
  const std::string z = v.step("Sigmoid", {v.step("Add", {x[1], hp[1]}, "z_sum")}, "update_gate");
  const std::string n =
      v.step("Tanh", {v.step("Add", {x[2], v.step("Mul", {r, hp[2]}, "reset_h")}, "n_sum")}, "candidate");
  v.node("Add", {n, v.step("Mul", {z, v.step("Sub", {v.in(2), n}, "h_minus_n")}, "update")});
}

}  // namespace

void add_cell_emitters(Emitters& table) {
  table.emplace("rnn_pointwise", rnn_pointwise);
  table.emplace("lstm_pointwise", lstm_pointwise);
  table.emplace("gru_pointwise", gru_pointwise);
}

}  // namespace recur::onnx_io::detail
