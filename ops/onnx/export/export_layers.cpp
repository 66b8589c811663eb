// recur::onnx_io::save of the sequence layers (export_layers.hpp): the graph of one ONNX
// RNN / LSTM / GRU node per layer and the ops that join them; a projected LSTM's layers,
// which ONNX's LSTM cannot hold, as Scans of the cell's equations (export_projected_lstm.cpp).
#include <recur/ops/onnx/export_layers.hpp>

#include <string>
#include <vector>

#include <recur/core/creation.hpp>
#include <recur/core/file_io.hpp>
#include <recur/ops/onnx/error.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_layer_weights_detail.hpp>
#include <recur/ops/onnx/export/export_projected_lstm_detail.hpp>

namespace recur::onnx_io {
namespace {

constexpr std::string_view kOp = "onnx_io::save";
constexpr std::int64_t kOpset = 14;

std::string op_type(nn::CellKind kind) { return std::string(nn::describe(kind).layer); }

// The graph under construction and the sizes every step of it needs.
struct LayerGraph {
  const nn::RecurrentLayer& rnn;
  const LayerExportOptions& options;
  ::onnx::GraphProto graph{};
  std::int64_t layers = rnn.options().num_layers, directions = rnn.num_directions(),
               hidden = rnn.options().hidden_size, h_size = rnn.h_size();  // h_size: P with a projection
  int type = detail::element_type(rnn.options().dtype);
  bool lstm = rnn.kind() == nn::CellKind::lstm;

  std::string layer_name(const std::string& what, std::int64_t k) const { return what + "_l" + std::to_string(k); }

  // h0 (or c0) [D*L, B, n] split into one [D, B, n] input per layer: their names.
  std::vector<std::string> split_state(const std::string& state, std::int64_t n) {
    if (!options.initial_state) return std::vector<std::string>(static_cast<std::size_t>(layers));
    add_input(state, {layers * directions, "B", n});
    if (layers == 1) return {state};
    std::vector<std::string> parts;
    for (std::int64_t k = 0; k < layers; ++k) parts.push_back(layer_name(state, k));
    detail::add_initializer(graph, state + "_split", full({layers}, static_cast<double>(directions), DType::int64));
    detail::add_node(graph, "Split", {state, state + "_split"}, parts, "split_" + state);
    return parts;
  }

  void add_input(const std::string& name, std::vector<detail::Dim> dims) {
    detail::add_input(graph, name, type, dims);
  }

  // The node of layer k reading x [T, B, I_k]; returns the name of its output as [T, B, D*H].
  std::string add_layer(std::int64_t k, const std::string& x, const std::string& h0, const std::string& c0,
                        const std::string& lengths) {
    if (rnn.options().proj_size > 0) return detail::add_projected_lstm_layer(graph, rnn, k, x, h0, c0).y;
    const detail::OnnxLayerWeights w = detail::onnx_layer_weights(rnn, k);
    const std::string W = layer_name("W", k), R = layer_name("R", k), B = w.b.defined() ? layer_name("B", k) : "";
    detail::add_initializer(graph, W, w.w);
    detail::add_initializer(graph, R, w.r);
    if (w.b.defined()) detail::add_initializer(graph, B, w.b);
    const std::string y = layer_name("Y", k);
    std::vector<std::string> outputs{y, layer_name("Y_h", k)};
    if (lstm) outputs.push_back(layer_name("Y_c", k));
    std::vector<std::string> inputs{x, W, R, B, lengths, h0};
    if (lstm) inputs.push_back(c0);
    ::onnx::NodeProto& node = detail::add_node(graph, op_type(rnn.kind()), inputs, outputs, layer_name("layer", k));
    detail::set_attribute(node, "hidden_size", hidden);
    detail::set_attribute(node, "direction", std::string(directions == 2 ? "bidirectional" : "forward"));
    if (rnn.kind() == nn::CellKind::gru)
      detail::set_attribute(node, "linear_before_reset", std::int64_t{rnn.options().linear_before_reset ? 1 : 0});
    if (rnn.kind() == nn::CellKind::rnn) {
      const std::string act = rnn.options().nonlinearity == nn::Nonlinearity::relu ? "Relu" : "Tanh";
      detail::set_attribute(node, "activations", std::vector<std::string>(static_cast<std::size_t>(directions), act));
    }
    // Y [T, D, B, H] -> [T, B, D, H] -> [T, B, D*H]: both directions' states side by side.
    const std::string swapped = layer_name("Y_swapped", k), joined = layer_name("Y_joined", k);
    detail::set_attribute(detail::add_node(graph, "Transpose", {y}, {swapped}, layer_name("swap", k)), "perm",
                          std::vector<std::int64_t>{0, 2, 1, 3});
    detail::add_node(graph, "Reshape", {swapped, "join_directions"}, {joined}, layer_name("join", k));
    return joined;
  }

  // The layers' final states [D, B, n] joined along axis 0 as the output `name`.
  void concat_states(const std::string& name, const std::string& each, std::int64_t n) {
    std::vector<std::string> parts;
    for (std::int64_t k = 0; k < layers; ++k) parts.push_back(layer_name(each, k));
    detail::set_attribute(detail::add_node(graph, "Concat", parts, {name}, "concat_" + name), "axis", std::int64_t{0});
    detail::add_output(graph, name, type, {layers * directions, "B", n});
  }

  ::onnx::GraphProto build() {
    graph.set_name(options.graph_name);
    const bool batch_first = rnn.options().batch_first;
    const std::int64_t input_size = rnn.options().input_size, width = directions * h_size;
    add_input("input", batch_first ? std::vector<detail::Dim>{"B", "T", input_size}
                                   : std::vector<detail::Dim>{"T", "B", input_size});
    const std::vector<std::string> h0 = split_state("h0", h_size);
    const std::vector<std::string> c0 = lstm ? split_state("c0", hidden) : std::vector<std::string>(h0.size());
    std::string lengths;
    if (options.sequence_lens) {
      lengths = "sequence_lens";
      detail::add_input(graph, lengths, ::onnx::TensorProto_DataType_INT32, {"B"});
    }
    detail::add_initializer(graph, "join_directions", from_vector(std::vector<std::int64_t>{0, 0, -1}, {3}));
    std::string x = "input";
    if (batch_first) {
      x = "input_time_first";
      detail::set_attribute(detail::add_node(graph, "Transpose", {"input"}, {x}, "time_first"), "perm",
                            std::vector<std::int64_t>{1, 0, 2});
    }
    for (std::int64_t k = 0; k < layers; ++k)
      x = add_layer(k, x, h0[static_cast<std::size_t>(k)], c0[static_cast<std::size_t>(k)], lengths);
    ::onnx::NodeProto& out = detail::add_node(graph, batch_first ? "Transpose" : "Identity", {x}, {"output"}, "output");
    if (batch_first) detail::set_attribute(out, "perm", std::vector<std::int64_t>{1, 0, 2});
    detail::add_output(graph, "output", type,
                       batch_first ? std::vector<detail::Dim>{"B", "T", width} : std::vector<detail::Dim>{"T", "B", width});
    concat_states("h_n", "Y_h", h_size);
    if (lstm) concat_states("c_n", "Y_c", hidden);
    return std::move(graph);
  }
};

}  // namespace

::onnx::ModelProto layer_model(const nn::RecurrentLayer& layer, const LayerExportOptions& options) {
  if (layer.options().proj_size > 0 && options.sequence_lens)  // its Scans run every step
    fail<UnsupportedError>(kOp, "option 'sequence_lens' with an LSTM of proj_size = ", layer.options().proj_size,
                           " is not supported: its layers are written as Scans of the cell, which run every step");
  return detail::checked_model(kOp, LayerGraph{layer, options}.build(), kOpset);
}

void save(const std::filesystem::path& path, const nn::RecurrentLayer& layer, const LayerExportOptions& options) {
  const std::string bytes = layer_model(layer, options).SerializeAsString();
  recur::detail::write_atomically(path, kOp, [&](recur::detail::FileSink& sink) { sink.write(bytes.data(), bytes.size()); });
}

}  // namespace recur::onnx_io
