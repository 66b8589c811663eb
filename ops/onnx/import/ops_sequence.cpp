// Sequence ops (ONNX's sequence of tensors, held as a std::vector of Vars): SequenceEmpty,
// SequenceConstruct, SequenceInsert, SequenceAt, SequenceErase, SequenceLength,
// ConcatFromSequence, SplitToSequence. Gradients pass through the tensors they hold.
#include <recur/core/creation.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

// A position of a sequence of `size` tensors, negative from the back; `size` itself is
// allowed where ONNX allows it (inserting at the end).
std::size_t position(const NodeContext& c, std::size_t input, std::int64_t size, bool end_allowed) {
  const std::int64_t p = integer_value(c, c.input(input), "position");
  const std::int64_t resolved = p < 0 ? p + size : p;
  if (resolved < 0 || resolved > size || (resolved == size && !end_allowed))
    c.invalid("position ", p, " is out of range for a sequence of ", size, " tensors");
  return static_cast<std::size_t>(resolved);
}

std::vector<Value> sequence_empty(const NodeContext&) { return {Sequence{}}; }

std::vector<Value> sequence_construct(const NodeContext& c) { return {Sequence(c.tensor_inputs())}; }

std::vector<Value> sequence_insert(const NodeContext& c) {
  Sequence s = c.sequence_input(0);
  const auto size = static_cast<std::int64_t>(s.size());
  const std::size_t at = c.has_input(2) ? position(c, 2, size, true) : s.size();
  s.insert(s.begin() + static_cast<std::ptrdiff_t>(at), c.input(1));
  return {s};
}

std::vector<Value> sequence_erase(const NodeContext& c) {
  Sequence s = c.sequence_input(0);
  const auto size = static_cast<std::int64_t>(s.size());
  const std::size_t at = c.has_input(1) ? position(c, 1, size, false) : s.size() - 1;
  if (s.empty()) c.invalid("erasing from an empty sequence");
  s.erase(s.begin() + static_cast<std::ptrdiff_t>(at));
  return {s};
}

std::vector<Value> sequence_at(const NodeContext& c) {
  const Sequence& s = c.sequence_input(0);
  return {s[position(c, 1, static_cast<std::int64_t>(s.size()), false)]};
}

std::vector<Value> sequence_length(const NodeContext& c) {
  return {constant(full({}, static_cast<double>(c.sequence_input(0).size()), DType::int64))};
}

// Joined along an existing axis, or (new_axis = 1) stacked along a new one.
std::vector<Value> concat_from_sequence(const NodeContext& c) {
  const Sequence& s = c.sequence_input(0);
  if (s.empty()) c.invalid("the sequence is empty");
  const std::int64_t axis = c.required_int_attr("axis");
  if (c.int_attr("new_axis", 0) != 0) return {stack(s, axis)};
  return {concat(s, axis)};
}

// Pieces of the given sizes (a scalar: pieces of that size, the last one shorter), or of
// size 1 with the axis dropped unless keepdims (also for a scalar split of 1, see below).
std::vector<Value> split_to_sequence(const NodeContext& c) {
  const Var& x = c.input(0);
  const std::int64_t axis = normalized_axis(c, c.int_attr("axis", 0), x.rank());
  const std::int64_t length = x.size(axis);
  std::vector<std::int64_t> sizes;
  bool drop_axis = false;
  if (!c.has_input(1)) {
    sizes.assign(static_cast<std::size_t>(length), 1);
    drop_axis = c.int_attr("keepdims", 1) == 0;
  } else if (c.input(1).rank() == 0) {
    const std::int64_t piece = integer_value(c, c.input(1), "split");
    if (piece <= 0) c.invalid("split ", piece, " must be positive");
    for (std::int64_t done = 0; done < length; done += piece) sizes.push_back(std::min(piece, length - done));
    // ONNX says keepdims is ignored when split is given, but PyTorch's exporter writes
    // unbind as split = 1 with keepdims = 0 and means the axis dropped (as ONNX Runtime
    // runs it): pieces of size 1 honour keepdims.
    drop_axis = piece == 1 && c.int_attr("keepdims", 1) == 0;
  } else {
    sizes = c.ints_input(1);
  }
  Sequence pieces = split(x, axis, sizes);
  if (drop_axis)
    for (auto& p : pieces) p = squeeze(p, axis);
  return {pieces};
}

}  // namespace

void add_sequence_ops(Registry& r) {
  r.add("SequenceEmpty", {.since = 11, .run_values = sequence_empty});
  r.add("SequenceConstruct", {.since = 11, .run_values = sequence_construct});
  r.add("SequenceInsert", {.since = 11, .run_values = sequence_insert});
  r.add("SequenceErase", {.since = 11, .run_values = sequence_erase});
  r.add("SequenceAt", {.since = 11, .run_values = sequence_at});
  r.add("SequenceLength", {.since = 11, .run_values = sequence_length});
  r.add("ConcatFromSequence", {.since = 11, .run_values = concat_from_sequence});
  r.add("SplitToSequence", {.since = 11, .run_values = split_to_sequence});
}

}  // namespace recur::onnx_io::detail
