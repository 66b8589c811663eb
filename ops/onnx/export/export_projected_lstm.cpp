// A projected LSTM layer as ONNX Scans over its cell's equations (export_projected_lstm_detail.hpp).
#include <recur/ops/onnx/export/export_projected_lstm_detail.hpp>

#include <vector>

#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_lstm_equations_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

// The names of one layer direction's values: `what` + _l{k}_d{d}.
struct Namer {
  std::string suffix;
  std::string operator()(const std::string& what) const { return what + suffix; }
};

// zeros [B, size] of `type`, B read off x [T, B, I] when the graph runs.
std::string zero_state(::onnx::GraphProto& graph, const Namer& name, const std::string& x, std::int64_t size,
                       DType dtype, const std::string& what) {
  const std::string shape = name(what + "_shape"), batch = name(what + "_batch"), dims = name(what + "_dims");
  add_node(graph, "Shape", {x}, {shape}, name(what + "_shape_of_x"));
  add_initializer(graph, name(what + "_batch_axis"), from_vector(std::vector<std::int64_t>{1}, {1}));
  add_node(graph, "Gather", {shape, name(what + "_batch_axis")}, {batch}, name(what + "_gather_batch"));
  add_initializer(graph, name(what + "_size"), from_vector(std::vector<std::int64_t>{size}, {1}));
  set_attribute(add_node(graph, "Concat", {batch, name(what + "_size")}, {dims}, name(what + "_concat_dims")), "axis",
                std::int64_t{0});
  const std::string zeros_name = name(what + "_zeros");
  set_attribute(add_node(graph, "ConstantOfShape", {dims}, {zeros_name}, name(what + "_fill")), "value",
                zeros({1}, dtype));
  return zeros_name;
}

// State d of s [D, B, n]: Gather with a scalar index drops the direction axis.
std::string direction_of(::onnx::GraphProto& graph, const Namer& name, const std::string& s, std::int64_t d,
                         const std::string& what) {
  add_initializer(graph, name(what + "_direction"), scalar(static_cast<double>(d), DType::int64));
  const std::string out = name(what + "_initial");
  set_attribute(add_node(graph, "Gather", {s, name(what + "_direction")}, {out}, name(what + "_take_direction")),
                "axis", std::int64_t{0});
  return out;
}

// The cell's step as a Scan body: (h [B, P], c [B, H], x_t [B, I]) -> (h', c', h').
::onnx::GraphProto cell_body(const Namer& name, int type, std::int64_t input, std::int64_t hidden, std::int64_t proj,
                             bool bias) {
  ::onnx::GraphProto body;
  body.set_name(name("cell"));
  const std::string h = name("h_prev"), c = name("c_prev"), x = name("x_t");
  add_input(body, h, type, {"B", proj});
  add_input(body, c, type, {"B", hidden});
  add_input(body, x, type, {"B", input});
  auto node = [&](const std::string& op, const std::vector<std::string>& in, const std::string& out) {
    add_node(body, op, in, {name(out)}, name("node_" + out));
    return name(out);
  };
  std::string gates = node("Add", {node("MatMul", {x, name("W_t")}, "x_proj"), node("MatMul", {h, name("R_t")}, "h_proj")},
                           "gates_no_bias");
  if (bias) gates = node("Add", {gates, name("B_sum")}, "gates");
  const std::vector<std::string> g{name("gate_i"), name("gate_f"), name("gate_g"), name("gate_o")};
  set_attribute(add_node(body, "Split", {gates, name("gate_sizes")}, g, name("node_split")), "axis", std::int64_t{1});
  const auto [c_next, m] = lstm_equations(node, g, c);
  const std::string h_next = node("MatMul", {m, name("Hr_t")}, "h_next");
  const std::string h_out = node("Identity", {h_next}, "h_out");
  add_output(body, h_next, type, {"B", proj});
  add_output(body, c_next, type, {"B", hidden});
  add_output(body, h_out, type, {"B", proj});
  return body;
}

}  // namespace

LayerOutputNames add_projected_lstm_layer(::onnx::GraphProto& graph, const nn::RecurrentLayer& rnn, std::int64_t k,
                                          const std::string& x, const std::string& h0, const std::string& c0) {
  const nn::RecurrentOptions& o = rnn.options();
  const std::int64_t hidden = o.hidden_size, proj = o.proj_size, directions = rnn.num_directions();
  const std::int64_t input = k == 0 ? o.input_size : directions * proj;
  const int type = element_type(o.dtype);
  const std::string layer = "_l" + std::to_string(k);
  std::vector<std::string> ys, hs, cs;
  for (std::int64_t d = 0; d < directions; ++d) {
    const Namer name{layer + "_d" + std::to_string(d)};
    const nn::CellParameters& p = rnn.weights(k, d);
    // The weights transposed, so that the body's products are x W^T as MatMul(x, W_t).
    add_initializer(graph, name("W_t"), transpose(p.w_ih.value(), 0, 1));
    add_initializer(graph, name("R_t"), transpose(p.w_hh.value(), 0, 1));
    add_initializer(graph, name("Hr_t"), transpose(p.w_hr.value(), 0, 1));
    if (p.b_ih.defined()) add_initializer(graph, name("B_sum"), p.b_ih.value() + p.b_hh.value());
    add_initializer(graph, name("gate_sizes"), full({4}, static_cast<double>(hidden), DType::int64));
    const std::string h_init = h0.empty() ? zero_state(graph, name, x, proj, o.dtype, "h0") : direction_of(graph, name, h0, d, "h0");
    const std::string c_init = c0.empty() ? zero_state(graph, name, x, hidden, o.dtype, "c0") : direction_of(graph, name, c0, d, "c0");
    hs.push_back(name("h_n"));
    cs.push_back(name("c_n"));
    ys.push_back(name("y"));
    ::onnx::NodeProto& scan = add_node(graph, "Scan", {h_init, c_init, x}, {hs.back(), cs.back(), ys.back()}, name("scan"));
    set_attribute(scan, "body", cell_body(name, type, input, hidden, proj, p.b_ih.defined()));
    set_attribute(scan, "num_scan_inputs", std::int64_t{1});
    // The reverse direction reads x from its end and prepends its outputs: time order again.
    set_attribute(scan, "scan_input_directions", std::vector<std::int64_t>{d});
    set_attribute(scan, "scan_output_directions", std::vector<std::int64_t>{d});
  }
  // [B, n] per direction -> [D, B, n]; [T, B, P] per direction -> [T, B, D*P].
  const std::string axis0 = "axis0" + layer;
  add_initializer(graph, axis0, from_vector(std::vector<std::int64_t>{0}, {1}));
  auto stack_directions = [&](const std::vector<std::string>& parts, const std::string& out) {
    std::vector<std::string> lifted;
    for (const std::string& part : parts) {
      lifted.push_back(part + "_lifted");
      add_node(graph, "Unsqueeze", {part, axis0}, {lifted.back()}, "unsqueeze_" + part);
    }
    set_attribute(add_node(graph, "Concat", lifted, {out}, "stack_" + out), "axis", std::int64_t{0});
    return out;
  };
  LayerOutputNames out{"Y_joined" + layer, stack_directions(hs, "Y_h" + layer), stack_directions(cs, "Y_c" + layer)};
  set_attribute(add_node(graph, "Concat", ys, {out.y}, "join" + layer), "axis", std::int64_t{2});
  return out;
}

}  // namespace recur::onnx_io::detail
