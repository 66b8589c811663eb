#pragma once
// Importing ONNX models onto the tape.
//
//   recur::onnx_io::Model m = recur::onnx_io::load("model.onnx");
//   Tape tape;
//   auto out = m.run({{"x", x}});         // every node recorded as recur ops
//   tape.backward(sum(out.at("y")));       // gradients reach m.parameters()
//
// The model's initializers become named Shared parameters (parameters()), read on the tape
// of each run: train them with optim::*, or leave them alone. Element types: float32,
// float64 and int64 as themselves; bool, int8/16/32 and uint8/16/32 become int64 (bool as
// 0/1); float16, bfloat16, strings and complex numbers are an UnsupportedError.
//
// Loading checks the whole model first (the ONNX checker, then that recur imports every
// node, in every body graph, at the model's opset): a model that would fail half-way does
// not load. The supported ops are listed in docs/onnx.md.
//
// save(path, m) writes the model back with every initializer holding its parameter's
// current value (after training), the rest of the graph as it was loaded.
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <stop_token>
#include <string_view>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/autodiff/module.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/onnx/error.hpp>
#include <recur/ops/scan/types.hpp>

namespace recur::onnx_io {

namespace detail {
struct ModelState;
}

// What run_with_sequences gives: the graph outputs that are tensors, and those that are
// sequences of tensors (ONNX's sequence type).
struct Outputs {
  std::map<std::string, Var> tensors;
  std::map<std::string, std::vector<Var>> sequences;
};

// How a run records the model's Scan and Loop nodes, which run on recur's scan engine: the
// options of every face of scan, applied to each of them (in body graphs too). Two kinds of
// Loop run unrolled instead, and refuse them (UnsupportedError): loops whose carried
// tensors change shape, and loops that carry a sequence otherwise than appending one tensor
// of a fixed shape per iteration (PyTorch's scripted loops append: they run on the engine).
//
// keep_last: a scan output that the graph reads only at its last iteration (Gather of index
// -1 or T-1, Slice [-1:] or [T-1:T] along its scan axis, as exporters write `out[-1]`)
// runs with the engine's Keep::last: the stacked [T, ...] output is never built, and backward
// holds one iteration's value of it instead of T. The values and gradients are the same;
// false stacks every scan output (to compare, or to measure).
//
// For models one did not write: max_iterations bounds each run of every Loop and Scan node
// (in body graphs too); one that would run more is a LimitError naming the node, raised
// before its first iteration when the count is known (a Scan, a Loop whose trip count M and
// condition say so), otherwise when the iteration past the bound begins. `cancel` ends the
// run from another thread: std::stop_source::request_stop() on the source it came from
// makes the run throw CancelledError before its next node or iteration (an op that has
// begun finishes first). Either way, as for every error of a run, the tape is left as it
// was (what the run recorded is dropped) and the model's parameters are unchanged.
struct RunOptions {
  std::int64_t truncate_gradient = -1;  // k >= 0: backpropagate through the last k iterations only
  Checkpoint checkpoint{};              // recompute iterations instead of keeping them (types.hpp)
  bool keep_last = true;                // Keep::last for scan outputs read only at their last iteration
  std::int64_t max_iterations = std::int64_t{1} << 20;  // per run of a Loop or Scan node (1,048,576)
  std::stop_token cancel{};             // stop requested: CancelledError (default: never)
};

class Model {
 public:
  // Runs the graph on the current tape. `inputs` feeds graph inputs by name (a Tensor
  // converts to a constant); an input that has an initializer may be left out (its
  // parameter is read). Returns every graph output by name.
  // ValueError if a graph output is a sequence (run_with_sequences gives those).
  std::map<std::string, Var> run(const std::map<std::string, Var>& inputs, const RunOptions& options = {}) const;
  // The same for models with sequence inputs or outputs: sequence inputs are fed by name
  // in `sequence_inputs`.
  Outputs run_with_sequences(const std::map<std::string, Var>& inputs,
                             const std::map<std::string, std::vector<Var>>& sequence_inputs = {},
                             const RunOptions& options = {}) const;

  // The initializers, as parameters (in the model's order, named as in the model).
  const std::vector<Shared>& parameters() const;
  // The same with their names, as optimizers and training checkpoints take them.
  NamedShared named_parameters() const;
  // The parameter of one initializer; ValueError naming the known ones if there is none.
  const Shared& parameter(std::string_view name) const;
  // The graph inputs that are not initializers, and the graph outputs, in order.
  std::vector<std::string> input_names() const;
  std::vector<std::string> output_names() const;
  // Whether the graph input or output `name` is a sequence of tensors.
  bool is_sequence(std::string_view name) const;
  // The version of the default ONNX domain ("ai.onnx") the model imports.
  std::int64_t opset() const;

  // The model as loaded, every initializer (in body graphs too) replaced by the current
  // value of its parameter, in the initializer's own element type; checked by
  // onnx::checker. ValueError if an integer parameter was assigned a value its element
  // type cannot hold.
  ::onnx::ModelProto trained_proto() const;

 private:
  friend Model load_from_bytes(std::string_view bytes, std::string_view origin);
  explicit Model(std::shared_ptr<const detail::ModelState> state) : state_(std::move(state)) {}
  std::shared_ptr<const detail::ModelState> state_;
};

// A serialized ModelProto from a file. IOError for a missing, unreadable or corrupt file;
// ValueError when the ONNX checker rejects the model; UnsupportedError naming the node, its
// op type and the opset when recur does not import one of its nodes.
Model load(const std::string& path);
// The same from the bytes of a serialized ModelProto; `origin` names them in messages.
Model load_from_bytes(std::string_view bytes, std::string_view origin = "<bytes>");

// The ops of the default domain a model uses that recur does not import at its opset (in
// body graphs too), as "OpType (opset N)"; empty when load would accept every node.
std::vector<std::string> unsupported_ops(const std::string& path);

// The op types of the default domain recur imports (at some opsets; docs/onnx.md).
std::vector<std::string> imported_op_types();

// m.trained_proto() written to `path`, atomically (IOError naming the path): loaded again,
// it gives the trained model's outputs.
void save(const std::filesystem::path& path, const Model& model);

// A serialized TensorProto (as in ONNX's test data) as a Tensor (element types as above).
Tensor load_tensor(const std::string& path);
// A serialized SequenceProto of tensors as its tensors.
std::vector<Tensor> load_sequence(const std::string& path);

}  // namespace recur::onnx_io
