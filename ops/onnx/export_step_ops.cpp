// Each recur op a scan's step records, as ONNX nodes of the body (export_step_ops_detail.hpp).
// An op's attributes are not on the tape: they are found as the one candidate value that,
// applied with recur's own op to the op's recorded (random) inputs, gives its recorded
// output exactly (a clip's bounds, which no finite input need show, by running the
// recorded op again on infinities). The cells' fused ops: export_step_cells.cpp.
#include <recur/ops/onnx/export_step_ops_detail.hpp>

#include <algorithm>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>

#include <recur/autodiff/tape_access.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/error.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/linalg.hpp>
#include <recur/ops/onnx/error.hpp>
#include <recur/ops/onnx/export_graph_detail.hpp>
#include <recur/ops/onnx/export_op_view_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/softmax.hpp>

namespace recur::onnx::detail {
namespace {

Emit same_inputs(std::string type) {
  return [type](const OpView& v) { v.node(type, v.all_inputs()); };
}

// The permutations p with y.shape[k] == x.shape[p[k]].
std::vector<Ints> permutations(const Shape& x, const Shape& y) {
  Ints p(x.size());
  std::iota(p.begin(), p.end(), 0);
  std::vector<Ints> all;
  if (x.size() != y.size()) return all;
  do {
    bool fits = true;
    for (std::size_t k = 0; k < p.size() && fits; ++k) fits = y[k] == x[static_cast<std::size_t>(p[k])];
    if (fits) all.push_back(p);
  } while (std::next_permutation(p.begin(), p.end()));
  return all;
}

// The axis subsets of a reduction (keepdims false, then true); the empty one last.
std::vector<std::pair<Axes, bool>> reductions(std::int64_t rank) {
  std::vector<std::pair<Axes, bool>> all;
  for (bool keep : {false, true})
    for (std::int64_t mask = (std::int64_t{1} << rank) - 1; mask >= 0; --mask) {
      Axes axes;
      for (std::int64_t a = 0; a < rank; ++a)
        if (mask & (std::int64_t{1} << a)) axes.push_back(a);
      all.emplace_back(axes, keep);
    }
  return all;
}

using ReduceFn = Tensor (*)(const Tensor&, const Axes&, bool);

// The axes and keepdims of a reduction `fn` (recur's empty axes mean all: the empty
// candidate is "nothing reduced").
std::pair<Ints, bool> reduced_axes(const OpView& v, ReduceFn fn) {
  const auto [axes, keep] = v.find("axes", reductions(v.rank()), [&](const auto& c) {
    return c.first.empty() ? v.x(0) : fn(v.x(0), c.first, c.second);
  });
  return {Ints(axes.begin(), axes.end()), keep};
}

// ReduceX over `axes` of `input` into `output`: axes as an input (ReduceSum from opset 13)
// or an attribute (the others up to opset 17).
void add_reduce(const OpView& v, const std::string& type, const std::string& input, const Ints& axes, bool keep,
                const std::string& output) {
  const bool axes_input = type == "ReduceSum";
  ::onnx::NodeProto& n = v.node(type, axes_input ? std::vector<std::string>{input, v.ints(axes, "axes")}
                                                 : std::vector<std::string>{input},
                                output);
  if (!axes_input) set_attribute(n, "axes", axes);
  set_attribute(n, "keepdims", std::int64_t{keep ? 1 : 0});
}

Emit reduce(std::string type, ReduceFn fn) {
  return [=](const OpView& v) {
    const auto [axes, keep] = reduced_axes(v, fn);
    if (axes.empty())
      v.node("Identity", {v.in(0)});
    else
      add_reduce(v, type, v.in(0), axes, keep, v.out());
  };
}

// logsumexp as max + log(sum(exp(x - max))), recur's own stable form, from ops every
// ONNX runtime (recur's importer too) has.
void logsumexp(const OpView& v) {
  const auto [axes, keep] = reduced_axes(v, &recur::logsumexp);
  if (axes.empty()) {
    v.node("Identity", {v.in(0)});
    return;
  }
  const std::string top = v.temp("max"), shifted = v.temp("shifted"), exps = v.temp("exp"), sums = v.temp("sum"),
                    logs = v.temp("log"), top_out = v.temp("max_out");
  add_reduce(v, "ReduceMax", v.in(0), axes, true, top);
  v.node("Sub", {v.in(0), top}, shifted);
  v.node("Exp", {shifted}, exps);
  add_reduce(v, "ReduceSum", exps, axes, keep, sums);
  v.node("Log", {sums}, logs);
  v.node("Reshape", {top, v.out_shape()}, top_out);
  v.node("Add", {logs, top_out});
}

// An op with one axis attribute, `attribute` of the ONNX node.
Emit along_axis(std::string type, std::string attribute, std::function<Tensor(const OpView&, std::int64_t)> fn) {
  return [=](const OpView& v) {
    Ints axes(static_cast<std::size_t>(std::max<std::int64_t>(v.rank(), 1)));
    std::iota(axes.begin(), axes.end(), 0);
    const std::int64_t axis = v.find("axis", axes, [&](std::int64_t a) { return fn(v, a); });
    set_attribute(v.node(type, v.all_inputs()), attribute, axis);
  };
}

// matmul_t's transposes of the last two axes, as Transpose nodes before MatMul.
void matmul(const OpView& v) {
  const std::vector<std::pair<bool, bool>> flags{{false, false}, {true, false}, {false, true}, {true, true}};
  const auto [ta, tb] =
      v.find("transposes", flags, [&](auto f) { return matmul_t(v.x(0), v.x(1), f.first, f.second); });
  std::vector<std::string> operands;
  for (std::size_t i : {0u, 1u}) {
    if (!(i == 0 ? ta : tb)) {
      operands.push_back(v.in(i));
      continue;
    }
    Ints perm(static_cast<std::size_t>(v.x(i).rank()));
    std::iota(perm.begin(), perm.end(), 0);
    std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
    operands.push_back(v.temp("transposed"));
    set_attribute(v.node("Transpose", {v.in(i)}, operands.back()), "perm", perm);
  }
  v.node("MatMul", operands);
}

void reshape(const OpView& v) {
  const Shape& shape = v.y().shape();
  ::onnx::NodeProto& n = v.node("Reshape", {v.in(0), v.out_shape()});
  if (std::count(shape.begin(), shape.end(), 0) > 0) set_attribute(n, "allowzero", std::int64_t{1});
}

void permute(const OpView& v) {
  const Ints perm = v.find("permutation", permutations(v.x(0).shape(), v.y().shape()),
                           [&](const Ints& p) { return recur::permute(v.x(0), Axes(p.begin(), p.end())); });
  set_attribute(v.node("Transpose", {v.in(0)}), "perm", perm);
}

struct SliceCandidate {
  std::int64_t axis, start, stop, step;
};

// The slices that could have made y: on the one axis where the shapes may differ, a start
// whose slab is y's first and a step to the slab of y's second.
std::vector<SliceCandidate> slice_candidates(const Tensor& x, const Tensor& y) {
  std::vector<SliceCandidate> all;
  if (x.rank() != y.rank()) return all;
  for (std::int64_t a = 0; a < x.rank(); ++a) {
    const std::int64_t n = x.size(a), count = y.size(a);
    if (count == 0) all.push_back({a, 0, 0, 1});
    for (std::int64_t s = 0; count > 0 && s < n; ++s) {
      if (!identical(index(x, a, s), index(y, a, 0))) continue;
      if (count == 1) all.push_back({a, s, s + 1, 1});
      for (std::int64_t d = 1; count > 1 && s + d * (count - 1) < n; ++d)
        if (identical(index(x, a, s + d), index(y, a, 1))) all.push_back({a, s, s + d * (count - 1) + 1, d});
    }
  }
  return all;
}

void slice(const OpView& v) {
  const SliceCandidate c = v.find("bounds", slice_candidates(v.x(0), v.y()), [&](const SliceCandidate& s) {
    return recur::slice(v.x(0), s.axis, s.start, s.stop, s.step);
  });
  v.node("Slice", {v.in(0), v.ints({c.start}, "starts"), v.ints({c.stop}, "ends"), v.ints({c.axis}, "axes"),
                   v.ints({c.step}, "steps")});
}

// x[i] along an axis: Gather with a scalar index, which drops the axis.
void index_along(const OpView& v) {
  std::vector<std::pair<std::int64_t, std::int64_t>> candidates;
  for (std::int64_t a = 0; a < v.rank(); ++a)
    for (std::int64_t i = 0; i < v.x(0).size(a); ++i) candidates.emplace_back(a, i);
  const auto [axis, i] =
      v.find("axis and position", candidates, [&](auto c) { return index(v.x(0), c.first, c.second); });
  const std::string position = v.graph.constant(from_vector(Ints{i}, {}), v.out() + "_index");
  set_attribute(v.node("Gather", {v.in(0), position}), "axis", axis);
}

// The axes sum_to sums over (kept): the leading ones and those broadcast from 1.
Ints summed_axes(const Shape& from, const Shape& to) {
  const auto rank = static_cast<std::int64_t>(from.size()), lead = rank - static_cast<std::int64_t>(to.size());
  Ints axes;
  for (std::int64_t a = 0; a < rank; ++a)
    if (a < lead || (to[a - lead] == 1 && from[a] != 1)) axes.push_back(a);
  return axes;
}

// sum_to: a sum over the broadcast axes (kept), then the target's shape.
void sum_to(const OpView& v) {
  const Ints axes = summed_axes(v.x(0).shape(), v.y().shape());
  for (const StepTrace* t : v.graph.traces())
    if (summed_axes(t->value(v.op.inputs[0]).shape(), t->value(v.op.node).shape()) != axes)
      fail<ValueError>(v.graph.op, "the axes of op 'sum_to' (node ", v.op.node, ") depend on the batch size: it "
                       "cannot run at another batch size (option 'batch_axis')");
  std::string summed = v.in(0);
  if (!axes.empty()) {
    summed = v.temp("summed");
    add_reduce(v, "ReduceSum", v.in(0), axes, true, summed);
  }
  v.node("Reshape", {summed, v.out_shape()});
}

void where(const OpView& v) {
  const std::string mask = v.temp("mask");
  set_attribute(v.node("Cast", {v.in(0)}, mask), "to", std::int64_t{::onnx::TensorProto_DataType_BOOL});
  v.node("Where", {mask, v.in(1), v.in(2)});
}

// clip's bounds are not on the tape: the recorded op, run again on -inf and +inf, gives them.
void clip(const OpView& v) {
  const double inf = std::numeric_limits<double>::infinity();
  const Tensor probe = from_vector(std::vector<double>{-inf, inf}, {2}).to(v.x(0).dtype());
  const Tensor* probes[] = {&probe};
  const std::optional<Tensor> bounds = TapeAccess::replay_on(*v.graph.trace.tape, v.op.node, InputList<Tensor>(probes, 1));
  if (!bounds) fail<ValueError>(v.graph.op, "op 'clip' (node ", v.op.node, ") kept no op to read its bounds from");
  v.node("Clip", {v.in(0), v.graph.constant(index(*bounds, 0, 0), v.out() + "_min"),
                  v.graph.constant(index(*bounds, 0, 1), v.out() + "_max")});
}

const Emitters& emitters() {
  static const Emitters table = [] {
    Emitters t;
    for (const auto& [recur_op, onnx_op] : std::vector<std::pair<std::string, std::string>>{
             {"add", "Add"}, {"sub", "Sub"}, {"mul", "Mul"}, {"div", "Div"}, {"pow", "Pow"},
             {"maximum", "Max"}, {"minimum", "Min"}, {"neg", "Neg"}, {"exp", "Exp"}, {"log", "Log"},
             {"sqrt", "Sqrt"}, {"abs", "Abs"}, {"tanh", "Tanh"}, {"sigmoid", "Sigmoid"}, {"relu", "Relu"},
             {"softplus", "Softplus"}})
      t.emplace(recur_op, same_inputs(onnx_op));
    t.emplace("matmul", matmul);
    t.emplace("reshape", reshape);
    t.emplace("permute", permute);
    t.emplace("slice", slice);
    t.emplace("index", index_along);
    t.emplace("where", where);
    t.emplace("clip", clip);
    add_cell_emitters(t);
    t.emplace("sum_to", sum_to);
    t.emplace("broadcast_to", [](const OpView& v) { v.node("Expand", {v.in(0), v.out_shape()}); });
    t.emplace("sum", reduce("ReduceSum", &recur::sum));
    t.emplace("max", reduce("ReduceMax", &recur::max));
    t.emplace("min", reduce("ReduceMin", &recur::min));
    t.emplace("prod", reduce("ReduceProd", &recur::prod));
    t.emplace("logsumexp", logsumexp);
    t.emplace("softmax",
              along_axis("Softmax", "axis", [](const OpView& v, std::int64_t a) { return softmax(v.x(0), a); }));
    t.emplace("log_softmax",
              along_axis("LogSoftmax", "axis", [](const OpView& v, std::int64_t a) { return log_softmax(v.x(0), a); }));
    t.emplace("concat", along_axis("Concat", "axis", [](const OpView& v, std::int64_t a) {
                std::vector<Tensor> xs;
                for (std::size_t i = 0; i < v.op.inputs.size(); ++i) xs.push_back(v.x(i));
                return concat(std::span<const Tensor>(xs), a);
              }));
    t.emplace("take",
              along_axis("Gather", "axis", [](const OpView& v, std::int64_t a) { return take(v.x(0), v.x(1), a); }));
    t.emplace("gather", along_axis("GatherElements", "axis",
                                   [](const OpView& v, std::int64_t a) { return gather(v.x(0), a, v.x(1)); }));
    return t;
  }();
  return table;
}

}  // namespace

std::string Names::unique(const std::string& hint) {
  std::string name = hint;
  for (int k = 2; used_.contains(name); ++k) name = hint + "_" + std::to_string(k);
  used_.insert(name);
  return name;
}

const std::string& StepGraph::name_of(std::uint32_t node) {
  if (auto it = value_names.find(node); it != value_names.end()) return it->second;
  if (trace.kind(node) != TracedKind::constant)
    fail<ValueError>(op, "node ", node, " of the step is used before it is computed");  // a bug, not the user's
  return value_names.emplace(node, constant_of(node)).first->second;
}

std::string StepGraph::ints(const std::vector<std::int64_t>& values, const std::string& hint) {
  return constant(from_vector(values, {static_cast<std::int64_t>(values.size())}), hint);
}

std::string StepGraph::constant(const Tensor& value, const std::string& hint) {
  const std::string name = names.unique(hint);
  set_attribute(add_node(body, "Constant", {}, {name}, names.unique("node_" + name)), "value", value);
  return name;
}

void add_op(StepGraph& graph, const TracedOp& op) {
  const auto it = emitters().find(op.name);
  if (it == emitters().end()) {
    std::string known;
    for (std::string_view name : exportable_ops()) known += (known.empty() ? "" : ", ") + std::string(name);
    fail<UnsupportedError>(graph.op, "the step records op '", op.name, "' (node ", op.node,
                           "), which has no ONNX form here; exported ops: ", known);
  }
  graph.value_names.emplace(op.node, graph.names.unique(op.name));
  it->second(OpView{graph, op, nullptr});
}

std::vector<std::string_view> exportable_ops() {
  std::vector<std::string_view> names;
  for (const auto& entry : emitters()) names.push_back(entry.first);
  return names;
}

}  // namespace recur::onnx::detail
