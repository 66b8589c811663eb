// libFuzzer harness for recur::onnx that mutates models rather than bytes: its custom
// mutator parses the input as a ModelProto and changes the graph (onnx_mutator.hpp), so
// most inputs stay models the ONNX checker and recur's importer accept and the fuzzer
// reaches the ops at run time, which fuzz_onnx's byte flips seldom do. A model that loads
// is run on inputs made from its declared types, and backpropagated through.
//
// Any recur::Error (IOError, ValueError, onnx_io::UnsupportedError, ShapeError, ...) is the
// accepted outcome; a crash, a sanitizer finding or another exception is a bug.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <onnx/onnx_pb.h>

#include <recur/autodiff/tape.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/onnx/model.hpp>
#include <recur/ops/reduce.hpp>

#include "fuzz_random.hpp"
#include "onnx_mutator.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

// Inputs beyond this many elements in all are not run: an execution stays in milliseconds,
// and the bugs worth finding do not need big tensors.
constexpr std::int64_t max_elements = 4096;
constexpr int max_rank = 6;
// A declared extent up to this is fed as declared (the seeds' weights and states are
// 10 to 60 wide, and a run that fails its input check covers nothing); beyond it, or
// symbolic, an extent is 2.
constexpr std::int64_t max_declared_extent = 64;

// The feed is a function of the model's bytes (FNV-1a), so that a crash replays.
std::uint64_t hash_of(const std::uint8_t* data, std::size_t size) {
  std::uint64_t h = 0xcbf29ce484222325ULL;
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 0x100000001b3ULL;
  return h;
}

// A tensor of the declared element type and shape (extents as above); no tensor when the
// rank or the element budget is exceeded. Floating values are small and of both signs;
// integers are 0..3, valid as indices, axes and counts in most places.
std::optional<recur::Tensor> make_input(const ::onnx::TypeProto_Tensor& type, recur::fuzz::Rng& rng,
                                        std::int64_t& budget) {
  recur::Shape shape;
  if (type.has_shape()) {
    if (type.shape().dim_size() > max_rank) return std::nullopt;
    for (const auto& d : type.shape().dim())
      shape.push_back(d.has_dim_value() && d.dim_value() >= 0 && d.dim_value() <= max_declared_extent
                          ? d.dim_value()
                          : 2);
  } else {
    shape.assign(rng.below(std::size_t{3}), 2);
  }
  const std::int64_t n = recur::numel(shape);
  if (n > budget) return std::nullopt;
  budget -= n;
  const recur::DType dtype = type.elem_type() == ::onnx::TensorProto::FLOAT    ? recur::DType::float32
                             : type.elem_type() == ::onnx::TensorProto::DOUBLE ? recur::DType::float64
                                                                               : recur::DType::int64;
  std::vector<double> values(static_cast<std::size_t>(n));
  for (auto& x : values)
    x = recur::is_floating(dtype) ? (static_cast<double>(rng.below(std::size_t{17})) - 8) / 4
                                  : static_cast<double>(rng.below(std::size_t{4}));
  return recur::from_vector(values, shape).to(dtype);
}

// Floating inputs are variables, so that backward reaches them too; integers are constants.
recur::Var fed(recur::Tape& tape, const recur::Tensor& t) {
  return recur::is_floating(t.dtype()) ? tape.variable(t) : tape.constant(t);
}

// The sum of one floating output (a tensor, or else a sequence element), the one the model's
// bytes pick, backpropagated.
void backward_through(recur::Tape& tape, const recur::onnx_io::Outputs& outputs, recur::fuzz::Rng& rng) {
  std::vector<recur::Var> floating;
  for (const auto& [name, v] : outputs.tensors)
    if (recur::is_floating(v.dtype())) floating.push_back(v);
  if (floating.empty())
    for (const auto& [name, seq] : outputs.sequences)
      for (const auto& v : seq)
        if (recur::is_floating(v.dtype())) floating.push_back(v);
  if (!floating.empty()) tape.backward(recur::sum(rng.pick(floating)));
}

void run(const recur::onnx_io::Model& model, const ::onnx::ModelProto& proto, recur::fuzz::Rng& rng) {
  recur::Tape tape;
  std::map<std::string, recur::Var> inputs;
  std::map<std::string, std::vector<recur::Var>> sequences;
  std::int64_t budget = max_elements;
  for (const auto& name : model.input_names()) {
    const ::onnx::ValueInfoProto* info = nullptr;
    for (const auto& in : proto.graph().input())
      if (in.name() == name) info = &in;
    if (!info) return;  // input_names() come from graph().input(): cannot happen
    const auto& type = info->type();
    if (type.has_sequence_type()) {
      // Empty or one element: what a sequence input can be fed within the budget.
      std::vector<recur::Var> seq;
      if (rng.one_in(2)) {
        auto t = make_input(type.sequence_type().elem_type().tensor_type(), rng, budget);
        if (!t) return;
        seq.push_back(fed(tape, *t));
      }
      sequences.emplace(name, std::move(seq));
    } else {
      auto t = make_input(type.tensor_type(), rng, budget);
      if (!t) return;
      inputs.emplace(name, fed(tape, *t));
    }
  }
  // The run's options drawn too, so that Scan and Loop nodes reach the engine's truncation
  // and recomputation (replays of the body) as well as its full tape.
  recur::onnx_io::RunOptions options;
  options.max_iterations = 64;  // hostile loops (a trip count of 2^62) end early
  options.keep_last = !rng.one_in(4);
  if (rng.one_in(4)) options.truncate_gradient = 1;
  if (rng.one_in(4)) options.checkpoint = recur::Checkpoint::every_k(2);
  const recur::onnx_io::Outputs outputs = model.run_with_sequences(inputs, sequences, options);
  backward_through(tape, outputs, rng);
}

// `model` serialized into libFuzzer's buffer; 0 when it does not fit.
std::size_t serialize_into(const ::onnx::ModelProto& model, std::uint8_t* data, std::size_t max_size) {
  std::string out;
  if (!model.SerializeToString(&out) || out.size() > max_size) return 0;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  ::onnx::ModelProto model;
  if (!model.ParseFromArray(data, static_cast<int>(size))) return LLVMFuzzerMutate(data, size, max_size);
  static const std::vector<std::string> op_types = recur::onnx_io::imported_op_types();
  static const recur::fuzz::ByteMutator bytes = LLVMFuzzerMutate;
  recur::fuzz::Rng rng(seed);
  recur::fuzz::mutate_model(model, rng, op_types, bytes);
  const std::size_t written = serialize_into(model, data, max_size);
  return written > 0 ? written : LLVMFuzzerMutate(data, size, max_size);
}

extern "C" std::size_t LLVMFuzzerCustomCrossOver(const std::uint8_t* data1, std::size_t size1,
                                                 const std::uint8_t* data2, std::size_t size2, std::uint8_t* out,
                                                 std::size_t max_out_size, unsigned int seed) {
  ::onnx::ModelProto model, other;
  if (!model.ParseFromArray(data1, static_cast<int>(size1)) || !other.ParseFromArray(data2, static_cast<int>(size2)))
    return 0;  // libFuzzer then mutates another way
  recur::fuzz::Rng rng(seed);
  if (!recur::fuzz::cross_over(model, other, rng)) return 0;
  return serialize_into(model, out, max_out_size);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    const std::string_view bytes(reinterpret_cast<const char*>(data), size);
    const recur::onnx_io::Model model = recur::onnx_io::load_from_bytes(bytes, "fuzz");
    ::onnx::ModelProto proto;  // the declared input types, which Model does not give
    if (!proto.ParseFromArray(data, static_cast<int>(size))) return 0;  // it loaded, so it parses
    recur::fuzz::Rng rng(hash_of(data, size));
    run(model, proto, rng);
    (void)model.trained_proto();
  } catch (const recur::Error& e) {
    // What a bad model, or a model that cannot run on these inputs, must give. With
    // RECUR_FUZZ_VERBOSE set, printed: how far the seeds and their mutants get.
    static const bool verbose = std::getenv("RECUR_FUZZ_VERBOSE") != nullptr;
    if (verbose) std::fprintf(stderr, "recur::Error: %s\n", e.what());
  }
  return 0;
}
