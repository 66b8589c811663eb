// A layer's weights in ONNX's layout and gate order (export_layer_weights_detail.hpp).
#include <recur/ops/onnx/export/export_layer_weights_detail.hpp>

#include <vector>

#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>

namespace recur::onnx_io::detail {
namespace {

// t [G*H, ...] with its G row blocks of `hidden` rows in ONNX's order (the cell kind's
// descriptor, ops/nn/cell_kind.hpp, says where each comes from in PyTorch's).
Tensor reorder_gates(const Tensor& t, nn::CellKind kind, std::int64_t hidden) {
  std::vector<Tensor> blocks;
  for (std::int64_t g : nn::describe(kind).onnx_gates) blocks.push_back(slice(t, 0, g * hidden, (g + 1) * hidden));
  return concat(blocks, 0);
}

}  // namespace

OnnxLayerWeights onnx_layer_weights(const nn::RecurrentLayer& rnn, std::int64_t layer) {
  const nn::CellKind kind = rnn.kind();
  const std::int64_t hidden = rnn.options().hidden_size;
  std::vector<Tensor> w, r, b;
  for (std::int64_t d = 0; d < rnn.num_directions(); ++d) {
    const nn::CellParameters& p = rnn.weights(layer, d);
    w.push_back(reorder_gates(p.w_ih.value(), kind, hidden));
    r.push_back(reorder_gates(p.w_hh.value(), kind, hidden));
    if (p.b_ih.defined())
      b.push_back(concat({reorder_gates(p.b_ih.value(), kind, hidden), reorder_gates(p.b_hh.value(), kind, hidden)}, 0));
  }
  return {stack(w, 0), stack(r, 0), b.empty() ? Tensor() : stack(b, 0)};
}

}  // namespace recur::onnx_io::detail
