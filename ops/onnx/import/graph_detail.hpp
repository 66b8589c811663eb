#pragma once
// Running a GraphProto on the tape: names bound to Vars in scopes (a body graph's scope
// sees its outer graphs'), nodes dispatched to the op registry in order.
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <variant>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/ops/onnx/import/last_reads_detail.hpp>
#include <recur/ops/onnx/model.hpp>

namespace recur::onnx_io::detail {

// Whether a node's (or an opset import's) domain is ONNX's default one, the one recur imports.
inline bool in_default_domain(std::string_view domain) { return domain.empty() || domain == "ai.onnx"; }

// Calls visit on each body graph of the node (a Loop's, an If's branches, a Scan's).
void for_each_body(const ::onnx::NodeProto& node, const std::function<void(const ::onnx::GraphProto&)>& visit);
// Calls visit on the graph and on every body graph inside it, outermost first.
void for_each_graph(const ::onnx::GraphProto& graph, const std::function<void(const ::onnx::GraphProto&)>& visit);

// A value of a graph: a tensor, or a sequence of tensors (ONNX's sequence type).
using Sequence = std::vector<Var>;
using Value = std::variant<Var, Sequence>;

// What a loaded model keeps: the proto, its opset, and a parameter per initializer.
struct ModelState {
  ::onnx::ModelProto proto;
  std::string origin;  // the file (or "<bytes>"), for messages
  std::int64_t opset = 0;
  std::vector<Shared> parameters;
  std::map<std::string, Shared, std::less<>> parameter_by_name;
  LastReads last_reads;  // scan outputs read only at their last iteration (last_reads_detail.hpp)
};

// The values visible while a graph runs: its own names, then its outer graphs'; and the
// run's options (the main graph's scope holds them, body graphs' scopes read its).
class Scope {
 public:
  explicit Scope(const Scope* outer = nullptr, const RunOptions* options = nullptr)
      : outer_(outer), options_(options ? options : outer ? outer->options_ : &defaults_) {}
  const RunOptions& options() const { return *options_; }
  void bind(const std::string& name, Value value) { values_[name] = std::move(value); }
  // The value of `name` here or in an outer scope; nullptr when none binds it.
  const Value* find(const std::string& name) const;
  // `name` (bound here) is a scan output's last element standing in for the stacked output,
  // its scan axis `axis` of size 1 (last_reads_detail.hpp); the axis, or nullopt if not.
  void mark_last_only(const std::string& name, std::int64_t axis) { last_only_[name] = axis; }
  std::optional<std::int64_t> last_only_axis(const std::string& name) const {
    const auto it = last_only_.find(name);
    return it == last_only_.end() ? std::nullopt : std::optional(it->second);
  }

 private:
  static inline const RunOptions defaults_{};
  const Scope* outer_;
  const RunOptions* options_;
  std::unordered_map<std::string, Value> values_;
  std::unordered_map<std::string, std::int64_t> last_only_;
};

// The graph's initializers bound to their parameters (read on the current tape).
void bind_initializers(const ModelState& model, const ::onnx::GraphProto& graph, Scope& scope);
// Runs the graph's nodes in `scope` (inputs and initializers already bound); its outputs.
std::vector<Value> run_nodes(const ModelState& model, const ::onnx::GraphProto& graph, Scope& scope);
// Runs `graph` with its (non-initializer) inputs bound to `inputs` in order, inside
// `outer` (nullptr for the main graph); returns its outputs in order.
std::vector<Value> run_graph(const ModelState& model, const ::onnx::GraphProto& graph, std::span<const Value> inputs,
                           const Scope* outer);

}  // namespace recur::onnx_io::detail
