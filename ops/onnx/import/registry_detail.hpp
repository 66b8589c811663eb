#pragma once
// The op registry: ONNX op type -> how to import it, for a range of opsets. One file per
// op family registers its ops (ops_*.cpp); an op type absent here, or an opset outside
// its range, is an UnsupportedError at load time.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <recur/ops/onnx/import/node_context_detail.hpp>

namespace recur::onnx_io::detail {

// Most ops take and give tensors (ImportFn); those that handle sequences too, or run body
// graphs that may, take and give Values (ValueImportFn).
using ImportFn = std::vector<Var> (*)(const NodeContext&);
using ValueImportFn = std::vector<Value> (*)(const NodeContext&);

struct OpImport {
  ImportFn run = nullptr;
  std::int64_t since = 1;      // the lowest opset recur imports it at
  std::int64_t until = 23;     // the highest
  ValueImportFn run_values = nullptr;  // used instead of `run` when set
};

class Registry {
 public:
  void add(std::string op_type, OpImport import) { ops_.push_back({std::move(op_type), import}); }
  // The import of `op_type` at `opset`, or nullptr.
  const OpImport* find(std::string_view op_type, std::int64_t opset) const;
  std::vector<std::string> op_types() const;

 private:
  struct Entry {
    std::string op_type;
    OpImport import;
  };
  std::vector<Entry> ops_;
};

// Every op recur imports (built once).
const Registry& registry();

// The families (one file each).
void add_elementwise_ops(Registry& r);
void add_matmul_ops(Registry& r);
void add_logic_ops(Registry& r);
void add_shape_ops(Registry& r);
void add_tensor_ops(Registry& r);
void add_reduce_ops(Registry& r);
void add_scan_ops(Registry& r);
void add_recurrent_ops(Registry& r);
void add_control_ops(Registry& r);
void add_sequence_ops(Registry& r);
void add_loss_ops(Registry& r);

}  // namespace recur::onnx_io::detail
