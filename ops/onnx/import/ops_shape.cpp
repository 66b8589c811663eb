// Ops that move elements: Reshape, Transpose, Squeeze, Unsqueeze, Expand, Concat, Split,
// Slice, Gather, GatherElements, Flatten, Identity. All are differentiable (through recur's views, take and
// concat); Squeeze, Unsqueeze, Split and Slice moved attributes to inputs over the opsets.
#include <algorithm>
#include <numeric>

#include <recur/ops/broadcast.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

// The axes of an attribute (opsets before `input_since`) or of input 1, or nullopt.
std::optional<std::vector<std::int64_t>> axes_of(const NodeContext& c, std::int64_t input_since) {
  if (c.opset() < input_since) return c.ints_attr("axes");
  if (c.has_input(1)) return c.ints_input(1);
  return std::nullopt;
}

std::vector<Var> reshape_import(const NodeContext& c) {
  const Var& x = c.input(0);
  const auto target = c.ints_input(1);
  const bool allow_zero = c.int_attr("allowzero", 0) != 0;
  Shape shape;
  for (std::size_t i = 0; i < target.size(); ++i) {
    if (target[i] == 0 && !allow_zero) {
      if (static_cast<std::int64_t>(i) >= x.rank()) c.invalid("shape entry ", i, " is 0 but the input has rank ", x.rank());
      shape.push_back(x.size(static_cast<std::int64_t>(i)));
    } else {
      shape.push_back(target[i]);
    }
  }
  return {reshape(x, shape)};
}

std::vector<Var> transpose_import(const NodeContext& c) {
  const Var& x = c.input(0);
  Axes perm;
  if (const auto p = c.ints_attr("perm")) {
    perm.assign(p->begin(), p->end());
  } else {
    for (std::int64_t i = x.rank() - 1; i >= 0; --i) perm.push_back(i);
  }
  return {permute(x, perm)};
}

// Squeeze, Unsqueeze and Slice forbid an axis named twice (3 and -1 of rank 4 too): the
// normalized axes, a ValueError naming the node otherwise.
std::vector<std::int64_t> distinct_axes(const NodeContext& c, const std::vector<std::int64_t>& given, std::int64_t rank) {
  std::vector<std::int64_t> axes;
  for (auto a : given) {
    const std::int64_t n = normalized_axis(c, a, rank);
    if (std::find(axes.begin(), axes.end(), n) != axes.end()) c.invalid("axis ", a, " is named twice (rank ", rank, ")");
    axes.push_back(n);
  }
  return axes;
}

std::vector<Var> squeeze_import(const NodeContext& c) {
  Var x = c.input(0);
  std::vector<std::int64_t> axes;
  if (const auto given = axes_of(c, 13)) {
    axes = distinct_axes(c, *given, x.rank());
  } else {
    for (std::int64_t i = 0; i < x.rank(); ++i)
      if (x.size(i) == 1) axes.push_back(i);
  }
  std::sort(axes.rbegin(), axes.rend());
  for (auto a : axes) x = squeeze(x, a);
  return {x};
}

std::vector<Var> unsqueeze_import(const NodeContext& c) {
  Var x = c.input(0);
  const auto given = axes_of(c, 13);
  if (!given) c.invalid("axes are required");
  const auto out_rank = x.rank() + static_cast<std::int64_t>(given->size());
  std::vector<std::int64_t> axes = distinct_axes(c, *given, out_rank);
  std::sort(axes.begin(), axes.end());
  for (auto a : axes) x = unsqueeze(x, a);
  return {x};
}

// Expand broadcasts both ways: the result has the broadcast of x's shape and the given one.
std::vector<Var> expand_import(const NodeContext& c) {
  const Var& x = c.input(0);
  const auto given = c.ints_input(1);
  const std::size_t rank = std::max(given.size(), static_cast<std::size_t>(x.rank()));
  Shape shape(rank, 1);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::size_t from_back = rank - 1 - i;
    const std::int64_t dx = from_back < static_cast<std::size_t>(x.rank()) ? x.shape()[x.shape().size() - 1 - from_back] : 1;
    const std::int64_t dg = from_back < given.size() ? given[given.size() - 1 - from_back] : 1;
    if (dx != dg && dx != 1 && dg != 1) c.invalid("cannot expand shape ", to_string(x.shape()), " to the given shape");
    shape[i] = dx == 1 ? dg : dx;
  }
  return {broadcast_to(x, shape)};
}

std::vector<Var> concat_import(const NodeContext& c) {
  return {concat(c.tensor_inputs(), c.required_int_attr("axis"))};
}

std::vector<Var> split_import(const NodeContext& c) {
  const Var& x = c.input(0);
  const std::int64_t axis = c.int_attr("axis", 0);
  std::optional<std::vector<std::int64_t>> sizes = c.opset() < 13 ? c.ints_attr("split") : std::nullopt;
  if (c.opset() >= 13 && c.has_input(1)) sizes = c.ints_input(1);
  if (sizes) return split(x, axis, *sizes);
  return split(x, axis, static_cast<std::int64_t>(c.output_count()));
}

// One axis of Slice, ONNX's clamping rules: positive steps clamp to [0, dim], negative ones
// to [-1, dim - 1]. Positive steps are recur's slice; negative ones a take of the indices.
Var slice_axis(const Var& x, std::int64_t axis, std::int64_t start, std::int64_t end, std::int64_t step) {
  const std::int64_t dim = x.size(axis);
  const auto resolve = [dim](std::int64_t v, std::int64_t lo, std::int64_t hi) {
    if (v < 0) v = v < -dim ? -dim - 1 : v + dim;  // stays below lo when far negative
    return std::clamp(v, lo, hi);
  };
  if (step > 0) return slice(x, axis, resolve(start, 0, dim), resolve(end, 0, dim), step);
  const std::int64_t first = resolve(start, 0, dim - 1);
  const std::int64_t last = resolve(end, -1, dim - 1);
  std::vector<std::int64_t> picked;
  for (std::int64_t i = first; i > last; i += step) picked.push_back(i);
  Tensor indices = Tensor::empty({static_cast<std::int64_t>(picked.size())}, DType::int64);
  std::copy(picked.begin(), picked.end(), indices.data<std::int64_t>());
  return take(x, indices, axis);
}

std::vector<Var> slice_import(const NodeContext& c) {
  Var x = c.input(0);
  std::vector<std::int64_t> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = c.ints_attr("starts").value_or(starts);
    ends = c.ints_attr("ends").value_or(ends);
    axes = c.ints_attr("axes").value_or(axes);
  } else {
    starts = c.ints_input(1);
    ends = c.ints_input(2);
    if (c.has_input(3)) axes = c.ints_input(3);
    if (c.has_input(4)) steps = c.ints_input(4);
  }
  if (axes.empty())
    for (std::size_t i = 0; i < starts.size(); ++i) axes.push_back(static_cast<std::int64_t>(i));
  if (steps.empty()) steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.invalid("starts, ends, axes and steps differ in length");
  const std::vector<std::int64_t> distinct = distinct_axes(c, axes, x.rank());
  for (std::size_t i = 0; i < starts.size(); ++i) {
    if (steps[i] == 0) c.invalid("a step is 0");
    x = slice_axis(x, distinct[i], starts[i], ends[i], steps[i]);
  }
  return {x};
}

std::vector<Var> gather_import(const NodeContext& c) {
  const Var& indices = c.input(1);
  if (indices.dtype() != DType::int64) c.invalid("indices must be integers, got ", indices.dtype());
  return {take(c.input(0), indices.value(), c.int_attr("axis", 0))};
}

// GatherElements is PyTorch's gather (recur's), negative indices counted from the back.
std::vector<Var> gather_elements_import(const NodeContext& c) {
  const Var& x = c.input(0);
  const Var& indices = c.input(1);
  if (indices.dtype() != DType::int64) c.invalid("indices must be integers, got ", indices.dtype());
  const std::int64_t axis = normalized_axis(c, c.int_attr("axis", 0), x.rank());
  Tensor wrapped = indices.value().clone();
  std::int64_t* p = wrapped.data<std::int64_t>();
  for (std::int64_t i = 0; i < wrapped.numel(); ++i)
    if (p[i] < 0) p[i] += x.size(axis);
  return {gather(x, axis, wrapped)};
}

// Flatten: [prod(shape[:axis]), prod(shape[axis:])].
std::vector<Var> flatten_import(const NodeContext& c) {
  const Var& x = c.input(0);
  std::int64_t axis = c.int_attr("axis", 1);
  if (axis < 0) axis += x.rank();
  if (axis < 0 || axis > x.rank()) c.invalid("axis ", axis, " is out of range for rank ", x.rank());
  std::int64_t rows = 1;
  for (std::int64_t i = 0; i < axis; ++i) rows *= x.size(i);
  std::int64_t cols = 1;
  for (std::int64_t i = axis; i < x.rank(); ++i) cols *= x.size(i);
  return {reshape(x, Shape{rows, cols})};
}

// Identity passes tensors and sequences alike.
std::vector<Value> identity_import(const NodeContext& c) { return {c.values()[0]}; }

}  // namespace

void add_shape_ops(Registry& r) {
  r.add("Reshape", {reshape_import, 5});  // before opset 5 the shape was an attribute
  r.add("Transpose", {transpose_import});
  r.add("Squeeze", {squeeze_import});
  r.add("Unsqueeze", {unsqueeze_import});
  r.add("Expand", {expand_import});
  r.add("Concat", {concat_import, 4});  // before opset 4 `axis` had a default
  r.add("Split", {split_import, 2});
  r.add("Slice", {slice_import});
  r.add("Gather", {gather_import});
  r.add("GatherElements", {gather_elements_import});
  r.add("Flatten", {flatten_import});
  r.add("Identity", {.run_values = identity_import});
}

}  // namespace recur::onnx_io::detail
