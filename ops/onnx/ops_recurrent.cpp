// ONNX's RNN, GRU and LSTM nodes on recur's fused layer ops (ops/nn/fused_recurrence.hpp):
// the weights are cut into PyTorch's gate order with slice and concat (so gradients reach
// the ONNX tensors), each direction is one fused op, outputs are put back in ONNX's layout.
// Imported: hidden_size, direction (forward, reverse, bidirectional), layout, initial
// states, GRU's linear_before_reset, activations equal to the defaults (RNN: Tanh or
// Relu), sequence_lens equal to the full length. Not imported (UnsupportedError): other
// activations, clip, input_forget, peepholes, shorter sequences.
#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/nn/fused_recurrence.hpp>
#include <recur/ops/onnx/op_helpers_detail.hpp>
#include <recur/ops/onnx/registry_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx::detail {
namespace {

// ONNX's gate blocks, in the order PyTorch's layout (the fused op's) wants them.
std::vector<std::int64_t> pytorch_gate_order(nn::CellKind kind) {
  switch (kind) {
    case nn::CellKind::lstm: return {0, 2, 3, 1};  // ONNX i o f c -> PyTorch i f g o
    case nn::CellKind::gru: return {1, 0, 2};      // ONNX z r h -> PyTorch r z n
    case nn::CellKind::rnn: break;
  }
  return {0};
}

// The rows of `w` (gate blocks of `hidden` rows along `axis`) in PyTorch's gate order.
Var reorder_gates(const Var& w, nn::CellKind kind, std::int64_t hidden, std::int64_t axis) {
  std::vector<Var> blocks;
  for (auto g : pytorch_gate_order(kind)) blocks.push_back(slice(w, axis, g * hidden, (g + 1) * hidden));
  return blocks.size() == 1 ? blocks[0] : concat(blocks, axis);
}

// The activations a node names must be the fused op's defaults (RNN: Tanh or Relu, the
// same for both directions); returns the RNN's nonlinearity.
nn::Nonlinearity check_activations(const NodeContext& c, nn::CellKind kind) {
  const auto* a = c.attribute("activations");
  if (!a || a->strings_size() == 0) return nn::Nonlinearity::tanh;
  std::vector<std::string> defaults{"Tanh"};
  if (kind == nn::CellKind::lstm) defaults = {"Sigmoid", "Tanh", "Tanh"};
  if (kind == nn::CellKind::gru) defaults = {"Sigmoid", "Tanh"};
  if (kind == nn::CellKind::rnn && a->strings(0) == "Relu") defaults = {"Relu"};
  for (int i = 0; i < a->strings_size(); ++i)
    if (a->strings(i) != defaults[static_cast<std::size_t>(i) % defaults.size()])
      c.unsupported("activation ", a->strings(i), " at position ", i,
                    " (imported: the defaults, and for RNN Tanh or Relu for every direction)");
  return defaults[0] == "Relu" ? nn::Nonlinearity::relu : nn::Nonlinearity::tanh;
}

std::vector<Var> recurrent_import(const NodeContext& c, nn::CellKind kind) {
  const std::string direction = c.string_attr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.invalid("direction '", direction, "' is none of forward, reverse, bidirectional");
  const std::size_t directions = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = c.int_attr("layout", 0) != 0;
  const std::int64_t hidden = c.required_int_attr("hidden_size");
  if (c.attribute("clip")) c.unsupported("attribute clip");
  if (c.int_attr("input_forget", 0) != 0) c.unsupported("input_forget = 1");
  if (kind == nn::CellKind::lstm && c.has_input(7)) c.unsupported("peepholes (input P)");
  nn::FusedRecurrenceOptions options;
  options.kind = kind;
  options.nonlinearity = check_activations(c, kind);
  options.linear_before_reset = c.int_attr("linear_before_reset", 0) != 0;

  Var x = c.input(0);
  if (batch_first) x = transpose(x, 0, 1);  // [T, B, I]
  const std::int64_t steps = x.size(0);
  const std::int64_t batch = x.size(1);
  if (c.has_input(4))
    for (auto length : c.ints_input(4))
      if (length != steps) c.unsupported("sequence_lens shorter than the sequence (", length, " of ", steps, ")");
  // Initial states [D, B, H] (layout 1: [B, D, H]); zeros when absent.
  const auto initial = [&](std::size_t i) -> Var {
    if (!c.has_input(i)) return constant(zeros({static_cast<std::int64_t>(directions), batch, hidden}, x.dtype()));
    return batch_first ? transpose(c.input(i), 0, 1) : c.input(i);
  };
  const Var h0 = initial(5);
  const Var c0 = kind == nn::CellKind::lstm ? initial(6) : Var();

  const std::int64_t gates = static_cast<std::int64_t>(pytorch_gate_order(kind).size());
  std::vector<Var> ys, final_h, final_c;
  for (std::size_t d = 0; d < directions; ++d) {
    const auto di = static_cast<std::int64_t>(d);
    nn::CellWeights w{.w_ih = reorder_gates(index(c.input(1), 0, di), kind, hidden, 0),
                      .w_hh = reorder_gates(index(c.input(2), 0, di), kind, hidden, 0)};
    if (c.has_input(3)) {
      const Var b = index(c.input(3), 0, di);  // [Wb, Rb]
      w.b_ih = reorder_gates(slice(b, 0, 0, gates * hidden), kind, hidden, 0);
      w.b_hh = reorder_gates(slice(b, 0, gates * hidden, 2 * gates * hidden), kind, hidden, 0);
    }
    options.reverse = direction == "reverse" || d == 1;
    const Var out = nn::fused_recurrence(options, x, w, index(h0, 0, di),
                                         kind == nn::CellKind::lstm ? index(c0, 0, di) : Var());
    const Var hs = kind == nn::CellKind::lstm ? slice(out, 0, 0, steps) : out;  // [T, B, H]
    ys.push_back(hs);
    final_h.push_back(index(hs, 0, options.reverse ? 0 : steps - 1));
    if (kind == nn::CellKind::lstm) final_c.push_back(index(out, 0, steps));
  }
  Var y = stack(ys, 1);               // [T, D, B, H]
  Var y_h = stack(final_h, 0);        // [D, B, H]
  Var y_c = kind == nn::CellKind::lstm ? stack(final_c, 0) : Var();
  if (batch_first) {
    y = permute(y, {2, 0, 1, 3});     // [B, T, D, H]
    y_h = transpose(y_h, 0, 1);       // [B, D, H]
    if (y_c.defined()) y_c = transpose(y_c, 0, 1);
  }
  std::vector<Var> outputs{y, y_h};
  if (kind == nn::CellKind::lstm) outputs.push_back(y_c);
  return outputs;
}

std::vector<Var> rnn_import(const NodeContext& c) { return recurrent_import(c, nn::CellKind::rnn); }
std::vector<Var> gru_import(const NodeContext& c) { return recurrent_import(c, nn::CellKind::gru); }
std::vector<Var> lstm_import(const NodeContext& c) { return recurrent_import(c, nn::CellKind::lstm); }

}  // namespace

void add_recurrent_ops(Registry& r) {
  r.add("RNN", {rnn_import, 7});
  r.add("GRU", {gru_import, 7});
  r.add("LSTM", {lstm_import, 7});
}

}  // namespace recur::onnx::detail
