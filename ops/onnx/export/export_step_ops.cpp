// Each recur op a scan's step records, as ONNX nodes of the body (export_step_ops_detail.hpp).
// An op's parameters (axes, bounds, transposes) are read off its description on the tape
// (autodiff/op_attributes.hpp). The cells' fused ops: export_step_cells.cpp.
#include <recur/ops/onnx/export/export_step_ops_detail.hpp>

#include <algorithm>
#include <numeric>

#include <recur/core/creation.hpp>
#include <recur/core/error.hpp>
#include <recur/core/shape.hpp>
#include <recur/ops/onnx/error.hpp>
#include <recur/ops/onnx/export/export_graph_detail.hpp>
#include <recur/ops/onnx/export/export_op_view_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

Emit same_inputs(std::string type) {
  return [type](const OpView& v) { v.node(type, v.all_inputs()); };
}

// A reduction's axes (recur's empty list: all of them), normalized and sorted, and keepdims.
std::pair<Ints, bool> reduced_axes(const OpView& v) {
  const Ints& raw = v.attribute<Ints>("axes");
  Ints axes(static_cast<std::size_t>(v.rank()));
  std::iota(axes.begin(), axes.end(), 0);
  if (!raw.empty()) {
    const Axes normalized = normalize_axes(v.op.name, Axes(raw.begin(), raw.end()), v.x(0).shape());
    axes.assign(normalized.begin(), normalized.end());
  }
  return {axes, v.attribute<bool>("keepdims")};
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

Emit reduce(std::string type) {
  return [=](const OpView& v) {
    const auto [axes, keep] = reduced_axes(v);
    if (axes.empty())
      v.node("Identity", {v.in(0)});
    else
      add_reduce(v, type, v.in(0), axes, keep, v.out());
  };
}

// logsumexp as max + log(sum(exp(x - max))), recur's own stable form, from ops every
// ONNX runtime (recur's importer too) has.
void logsumexp(const OpView& v) {
  const auto [axes, keep] = reduced_axes(v);
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

// An op with one axis, attribute `attribute` of the ONNX node `type`.
Emit along_axis(std::string type, std::string attribute) {
  return [=](const OpView& v) { set_attribute(v.node(type, v.all_inputs()), attribute, v.axis()); };
}

// matmul_t's transposes of the last two axes, as Transpose nodes before MatMul.
void matmul(const OpView& v) {
  const bool transposed[] = {v.attribute<bool>("transpose_a"), v.attribute<bool>("transpose_b")};
  std::vector<std::string> operands;
  for (std::size_t i : {0u, 1u}) {
    if (!transposed[i]) {
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
  Ints perm;
  for (std::int64_t d : v.attribute<Ints>("dims")) perm.push_back(normalize_axis(v.op.name, d, v.x(0).shape(), "dims"));
  set_attribute(v.node("Transpose", {v.in(0)}), "perm", perm);
}

// ONNX's Slice clamps its bounds as recur's slice does (Python's rules, step >= 1).
void slice(const OpView& v) {
  v.node("Slice", {v.in(0), v.ints({v.attribute<std::int64_t>("start")}, "starts"),
                   v.ints({v.attribute<std::int64_t>("stop")}, "ends"), v.ints({v.axis()}, "axes"),
                   v.ints({v.attribute<std::int64_t>("step")}, "steps")});
}

// x[i] along an axis: Gather with a scalar index (negative counts from the back, as in
// recur), which drops the axis.
void index_along(const OpView& v) {
  const std::string position =
      v.graph.constant(from_vector(Ints{v.attribute<std::int64_t>("index")}, {}), v.out() + "_index");
  set_attribute(v.node("Gather", {v.in(0), position}), "axis", v.axis());
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

// ONNX has no stack: each input unsqueezed along the new axis, then joined along it.
void stack(const OpView& v) {
  const std::int64_t axis = normalize_axis(v.op.name, v.attribute<std::int64_t>("axis"), v.y().shape());
  const std::string axes = v.ints({axis}, "axes");
  std::vector<std::string> lifted;
  for (std::size_t i = 0; i < v.op.inputs.size(); ++i) lifted.push_back(v.step("Unsqueeze", {v.in(i), axes}, "lifted"));
  set_attribute(v.node("Concat", lifted), "axis", axis);
}

void clip(const OpView& v) {
  const DType dtype = v.x(0).dtype();
  v.node("Clip", {v.in(0), v.graph.constant(scalar(v.attribute<double>("lo"), dtype), v.out() + "_min"),
                  v.graph.constant(scalar(v.attribute<double>("hi"), dtype), v.out() + "_max")});
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
    t.emplace("sum", reduce("ReduceSum"));
    t.emplace("max", reduce("ReduceMax"));
    t.emplace("min", reduce("ReduceMin"));
    t.emplace("prod", reduce("ReduceProd"));
    t.emplace("logsumexp", logsumexp);
    t.emplace("softmax", along_axis("Softmax", "axis"));
    t.emplace("log_softmax", along_axis("LogSoftmax", "axis"));
    t.emplace("concat", along_axis("Concat", "axis"));
    t.emplace("stack", stack);
    t.emplace("take", along_axis("Gather", "axis"));
    t.emplace("gather", along_axis("GatherElements", "axis"));
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
  it->second(OpView{graph, op});
}

std::vector<std::string_view> exportable_ops() {
  std::vector<std::string_view> names;
  for (const auto& entry : emitters()) names.push_back(entry.first);
  return names;
}

}  // namespace recur::onnx_io::detail
