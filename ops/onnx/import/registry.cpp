#include <recur/ops/onnx/import/registry_detail.hpp>

#include <algorithm>

#include <recur/ops/onnx/model.hpp>

namespace recur::onnx_io::detail {

const OpImport* Registry::find(std::string_view op_type, std::int64_t opset) const {
  for (const auto& e : ops_)
    if (e.op_type == op_type && e.import.since <= opset && opset <= e.import.until) return &e.import;
  return nullptr;
}

std::vector<std::string> Registry::op_types() const {
  std::vector<std::string> out;
  for (const auto& e : ops_)
    if (std::find(out.begin(), out.end(), e.op_type) == out.end()) out.push_back(e.op_type);
  return out;
}

const Registry& registry() {
  static const Registry r = [] {
    Registry built;
    add_elementwise_ops(built);
    add_matmul_ops(built);
    add_logic_ops(built);
    add_shape_ops(built);
    add_tensor_ops(built);
    add_reduce_ops(built);
    add_scan_ops(built);
    add_recurrent_ops(built);
    add_control_ops(built);
    add_sequence_ops(built);
    add_loss_ops(built);
    return built;
  }();
  return r;
}

}  // namespace recur::onnx_io::detail

namespace recur::onnx_io {
std::vector<std::string> imported_op_types() { return detail::registry().op_types(); }
}  // namespace recur::onnx_io
