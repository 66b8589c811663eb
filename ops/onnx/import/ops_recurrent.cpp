// ONNX's RNN, GRU and LSTM nodes, every attribute of opset 14. A direction whose cell is
// one of recur's fused layer ops (ops/nn/fused_recurrence.hpp: the default activations, RNN
// with Tanh or Relu, no clip, input_forget or peepholes) runs as that one op, its weights
// cut into PyTorch's gate order with slice and concat (so gradients reach the ONNX
// tensors); any other runs ONNX's equations step by step on recur's scan
// (recurrent_cells_detail.hpp). Both are exactly differentiable. sequence_lens is the
// layers' `lengths`: outputs past an element's length are zero, Y_h and Y_c its state
// after its last step. Outputs are put back in ONNX's layout.
#include <optional>

#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/nn/direction.hpp>
#include <recur/ops/nn/fused_recurrence.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/recurrent_cells_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

std::vector<std::string> default_activations(nn::CellKind kind) {
  const auto& names = nn::describe(kind).onnx_activations;
  return std::vector<std::string>(names.begin(), names.end());
}

// The rows of `w` (gate blocks of `hidden` rows along `axis`) in PyTorch's gate order.
Var reorder_gates(const Var& w, nn::CellKind kind, std::int64_t hidden, std::int64_t axis) {
  if (!w.defined()) return w;
  std::vector<Var> blocks;
  for (auto g : nn::describe(kind).pytorch_gates_in_onnx()) blocks.push_back(slice(w, axis, g * hidden, (g + 1) * hidden));
  return blocks.size() == 1 ? blocks[0] : concat(blocks, axis);
}

// The fused op's nonlinearity when it computes `cell` (with peepholes or not), else none.
std::optional<nn::Nonlinearity> fused_nonlinearity(const OnnxCell& cell, bool peepholes) {
  if (cell.clip || cell.input_forget || peepholes) return std::nullopt;
  std::vector<std::string> names;
  for (const auto& a : cell.activations) names.push_back(a.name);
  if (cell.kind == nn::CellKind::rnn && names[0] == "Relu") return nn::Nonlinearity::relu;
  if (names == default_activations(cell.kind)) return nn::Nonlinearity::tanh;
  return std::nullopt;
}

// One direction on the fused op (h0, c0 [B, H]; lengths empty when every element runs T steps).
DirectionStates fused_direction(const OnnxCell& cell, nn::Nonlinearity nonlinearity, const Var& x,
                                const DirectionWeights& w, const Var& h0, const Var& c0, bool reverse,
                                const std::vector<std::int64_t>& lengths) {
  const std::int64_t hidden = h0.size(1);
  const nn::CellWeights pytorch{.w_ih = reorder_gates(w.w, cell.kind, hidden, 0),
                                .w_hh = reorder_gates(w.r, cell.kind, hidden, 0),
                                .b_ih = reorder_gates(w.wb, cell.kind, hidden, 0),
                                .b_hh = reorder_gates(w.rb, cell.kind, hidden, 0)};
  const nn::FusedRecurrenceOptions options{.kind = cell.kind,
                                           .nonlinearity = nonlinearity,
                                           .linear_before_reset = cell.linear_before_reset,
                                           .reverse = reverse,
                                           .lengths = lengths.empty() ? SequenceLengths() : SequenceLengths(lengths)};
  // Y zero past each element's length, as ONNX wants, and the states after its last step.
  const nn::detail::DirectionOutput out = nn::detail::fused_direction(options, x, pytorch, h0, c0);
  return {out.outputs, out.h_n, out.c_n};
}

// sequence_lens as per-element lengths; empty when absent or every one is the full length.
// ValueError naming the node unless it holds one length in [0, steps] per batch element.
std::vector<std::int64_t> sequence_lengths(const NodeContext& c, std::int64_t steps, std::int64_t batch) {
  if (!c.has_input(4)) return {};
  if (c.input(4).rank() != 1 || c.input(4).size(0) != batch)
    c.invalid("sequence_lens has shape ", to_string(c.input(4).shape()), ", not [", batch, "] (one length per batch element)");
  std::vector<std::int64_t> lengths = c.ints_input(4);
  for (auto length : lengths)
    if (length < 0 || length > steps) c.invalid("sequence_lens holds ", length, ", outside [0, ", steps, "]");
  for (auto length : lengths)
    if (length != steps) return lengths;
  return {};
}

// ValueError naming the node unless X is [T, B, I] and W, R and B have the shapes ONNX gives
// them for `gates` gates of `hidden` units over `directions` directions (sizes compared by
// division, so that a hostile hidden_size cannot overflow a product).
void check_weight_shapes(const NodeContext& c, const Var& x, std::int64_t directions, std::int64_t gates,
                         std::int64_t hidden) {
  const auto shape_of = [&](std::size_t i) { return to_string(c.input(i).shape()); };
  if (hidden < 1) c.invalid("hidden_size = ", hidden, "; it must be at least 1");
  if (x.rank() != 3) c.invalid("X has shape ", to_string(x.shape()), ", not [T, B, I]");
  const Var& w = c.input(1);
  const Var& r = c.input(2);
  const bool rows_fit = w.rank() == 3 && r.rank() == 3 && w.size(1) % gates == 0 && w.size(1) / gates == hidden &&
                        r.size(1) == w.size(1) && r.size(2) == hidden && w.size(2) == x.size(2) &&
                        w.size(0) == directions && r.size(0) == directions;
  if (!rows_fit)
    c.invalid("W ", shape_of(1), " and R ", shape_of(2), " do not fit ", directions, " direction(s) of ", gates,
              " gates of hidden_size ", hidden, " over inputs of ", x.size(2));
  if (c.has_input(3)) {
    const Var& b = c.input(3);
    if (b.rank() != 2 || b.size(0) != directions || b.size(1) % 2 != 0 || b.size(1) / 2 != w.size(1))
      c.invalid("B has shape ", shape_of(3), ", not [", directions, ", 2 x ", w.size(1), "]");
  }
}

std::vector<Var> recurrent_import(const NodeContext& c, nn::CellKind kind) {
  const std::string direction = c.string_attr("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    c.invalid("direction '", direction, "' is none of forward, reverse, bidirectional");
  const std::size_t directions = direction == "bidirectional" ? 2 : 1;
  const bool batch_first = c.int_attr("layout", 0) != 0;
  const std::int64_t hidden = c.required_int_attr("hidden_size");
  const std::vector<Activation> activations = node_activations(c, default_activations(kind), directions);
  const std::size_t per_direction = activations.size() / directions;
  OnnxCell cell{.kind = kind,
                .clip = c.attribute("clip") ? std::optional<double>(c.float_attr("clip", 0)) : std::nullopt,
                .input_forget = kind == nn::CellKind::lstm && c.int_attr("input_forget", 0) != 0,
                .linear_before_reset = kind == nn::CellKind::gru && c.int_attr("linear_before_reset", 0) != 0};
  if (cell.clip && !(*cell.clip > 0)) c.invalid("clip = ", *cell.clip, "; a clip threshold is positive");
  const bool peepholes = kind == nn::CellKind::lstm && c.has_input(7);

  Var x = c.input(0);
  if (batch_first) x = transpose(x, 0, 1);  // [T, B, I]
  const std::int64_t gates = nn::describe(kind).gate_count();
  check_weight_shapes(c, x, static_cast<std::int64_t>(directions), gates, hidden);
  const std::int64_t steps = x.size(0), batch = x.size(1);
  const std::vector<std::int64_t> lengths = sequence_lengths(c, steps, batch);
  // Initial states [D, B, H] (layout 1: [B, D, H]); zeros when absent.
  const auto initial = [&](std::size_t i) -> Var {
    if (!c.has_input(i)) return constant(zeros({static_cast<std::int64_t>(directions), batch, hidden}, x.dtype()));
    return batch_first ? transpose(c.input(i), 0, 1) : c.input(i);
  };
  const Var h0 = initial(5);
  const Var c0 = kind == nn::CellKind::lstm ? initial(6) : Var();
  std::vector<Var> ys, final_h, final_c;
  for (std::size_t d = 0; d < directions; ++d) {
    const auto di = static_cast<std::int64_t>(d);
    DirectionWeights w{.w = index(c.input(1), 0, di), .r = index(c.input(2), 0, di)};
    if (c.has_input(3)) {
      const Var b = index(c.input(3), 0, di);  // [Wb, Rb]
      w.wb = slice(b, 0, 0, gates * hidden);
      w.rb = slice(b, 0, gates * hidden, 2 * gates * hidden);
    }
    if (peepholes) w.p = index(c.input(7), 0, di);
    cell.activations.assign(activations.begin() + static_cast<std::ptrdiff_t>(d * per_direction),
                            activations.begin() + static_cast<std::ptrdiff_t>((d + 1) * per_direction));
    const bool reverse = direction == "reverse" || d == 1;
    const Var h0_d = index(h0, 0, di), c0_d = kind == nn::CellKind::lstm ? index(c0, 0, di) : Var();
    const auto nonlinearity = fused_nonlinearity(cell, peepholes);
    const DirectionStates out =
        nonlinearity ? fused_direction(cell, *nonlinearity, x, w, h0_d, c0_d, reverse, lengths)
                     : scan_direction(cell, x, w, h0_d, c0_d, reverse,
                                      lengths.empty() ? SequenceLengths() : SequenceLengths(lengths));
    ys.push_back(out.y);
    final_h.push_back(out.h);
    if (kind == nn::CellKind::lstm) final_c.push_back(out.c);
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

}  // namespace recur::onnx_io::detail
