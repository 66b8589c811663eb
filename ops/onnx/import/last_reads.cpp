// Scan outputs read only at their last iteration (last_reads_detail.hpp): found at load,
// decided when their Scan or Loop node runs, read through a stand-in.
#include <recur/ops/onnx/import/last_reads_detail.hpp>

#include <algorithm>
#include <string>
#include <unordered_set>

#include <recur/ops/onnx/import/graph_detail.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/tensor_proto_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

using ::onnx::GraphProto;
using ::onnx::NodeProto;

// Every name a body graph (and the bodies inside it) reads.
void add_names_read(const GraphProto& body, std::unordered_set<std::string>& names) {
  for_each_graph(body, [&](const GraphProto& g) {
    for (const auto& n : g.node()) names.insert(n.input().begin(), n.input().end());
  });
}

// Where the node's scan outputs begin among its outputs; nullopt for other nodes.
std::optional<int> first_scan_output(const NodeProto& n, std::int64_t opset) {
  if (!in_default_domain(n.domain())) return std::nullopt;
  if (n.op_type() == "Loop" && n.input_size() >= 2) return n.input_size() - 2;
  if (n.op_type() != "Scan" || opset < 9) return std::nullopt;  // opset 8's outputs have a batch axis first
  for (const auto& a : n.attribute())
    if (a.name() == "num_scan_inputs" && a.i() >= 0 && a.i() <= n.input_size())
      return n.input_size() - static_cast<int>(a.i());
  return std::nullopt;
}

// A Gather or Slice taking `name` as its data and nothing else.
bool reads_as_data(const NodeProto& n, const std::string& name) {
  if (!in_default_domain(n.domain()) || (n.op_type() != "Gather" && n.op_type() != "Slice")) return false;
  return n.input(0) == name && std::count(n.input().begin(), n.input().end(), name) == 1;
}

// The value of an int64 Constant node (value, value_int or value_ints); nullopt for others.
std::optional<Tensor> int64_constant(const NodeProto& n) {
  if (!in_default_domain(n.domain()) || n.op_type() != "Constant" || n.output_size() != 1) return std::nullopt;
  for (const auto& a : n.attribute()) {
    if (a.name() == "value" && a.t().data_type() == ::onnx::TensorProto::INT64) return tensor_from_proto(a.t(), n.name());
    if (a.name() == "value_int") {  // exactly, not through a double
      Tensor t = Tensor::empty({}, DType::int64);
      t.data<std::int64_t>()[0] = a.i();
      return t;
    }
    if (a.name() == "value_ints") {
      Tensor t = Tensor::empty({a.ints_size()}, DType::int64);
      std::copy(a.ints().begin(), a.ints().end(), t.data<std::int64_t>());
      return t;
    }
  }
  return std::nullopt;
}

// `visible`: the int64 Constants of the enclosing graphs by name. ONNX scopes names per
// graph, so a body sees its own and its enclosing graphs' names, never a sibling body's.
void find_in_graph(const GraphProto& g, std::int64_t opset, ConstantsByName visible, LastReads& out) {
  for (const auto& n : g.node())
    if (auto value = int64_constant(n)) visible.insert_or_assign(n.output(0), std::move(*value));
  std::unordered_map<std::string, std::vector<const NodeProto*>> readers_of;
  std::unordered_set<std::string> read_elsewhere;
  for (const auto& o : g.output()) read_elsewhere.insert(o.name());
  for (const auto& n : g.node()) {
    for (const auto& name : n.input()) readers_of[name].push_back(&n);
    for_each_body(n, [&](const GraphProto& body) {
      add_names_read(body, read_elsewhere);
      find_in_graph(body, opset, visible, out);
    });
  }
  for (const auto& n : g.node()) {
    const auto first = first_scan_output(n, opset);
    if (!first) continue;
    for (int i = *first; i < n.output_size(); ++i) {
      const std::string& name = n.output(i);
      const auto it = readers_of.find(name);
      if (name.empty() || read_elsewhere.count(name) || it == readers_of.end()) continue;
      const auto& readers = it->second;
      if (!std::all_of(readers.begin(), readers.end(), [&](const NodeProto* r) { return reads_as_data(*r, name); }))
        continue;
      out.by_scan_node[&n][static_cast<std::size_t>(i - *first)] = readers;
      for (const NodeProto* r : readers) {
        out.readers.insert(r);
        for (int k = 1; k < r->input_size(); ++k)  // the index, bounds, axes and steps
          if (const auto c = visible.find(r->input(k)); c != visible.end()) out.constants[r].insert(*c);
      }
    }
  }
}

// The int64 tensor that `reader`'s input `name` is bound to now, or the Constant node's in
// the reader's scope that gives it; nullopt when neither (computed after the scan node, or
// not integers).
std::optional<Tensor> known_int64(const NodeContext& c, const NodeProto& reader, const std::string& name) {
  const Value* v = c.find_value(name);
  const Var* x = v ? std::get_if<Var>(v) : nullptr;
  if (x && x->defined() && x->dtype() == DType::int64) return x->value();
  const auto of_reader = c.last_reads().constants.find(&reader);
  if (of_reader == c.last_reads().constants.end()) return std::nullopt;
  const auto it = of_reader->second.find(name);
  if (it != of_reader->second.end()) return it->second;
  return std::nullopt;
}

std::optional<std::vector<std::int64_t>> ints_bound(const NodeContext& c, const NodeProto& reader, const std::string& name) {
  const auto t = known_int64(c, reader, name);
  if (!t) return std::nullopt;
  return std::vector<std::int64_t>(t->data<std::int64_t>(), t->data<std::int64_t>() + t->numel());
}

// Input i of `n` if it names one (absent optional inputs: an empty list); nullopt when it is
// not known now.
std::optional<std::vector<std::int64_t>> optional_ints(const NodeContext& c, const NodeProto& n, int i) {
  if (i >= n.input_size() || n.input(i).empty()) return std::vector<std::int64_t>{};
  return ints_bound(c, n, n.input(i));
}

std::optional<std::vector<std::int64_t>> ints_attribute(const NodeProto& n, const std::string& name) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return std::vector<std::int64_t>(a.ints().begin(), a.ints().end());
  return std::vector<std::int64_t>{};
}

std::int64_t int_attribute(const NodeProto& n, const std::string& name, std::int64_t fallback) {
  for (const auto& a : n.attribute())
    if (a.name() == name) return a.i();
  return fallback;
}

bool picks_last(std::int64_t i, const Iterations& it) { return i == -1 || (it.exactly && i == *it.exactly - 1); }

bool gather_reads_last(const NodeContext& c, const NodeProto& n, std::int64_t axis, const Iterations& it) {
  if (int_attribute(n, "axis", 0) != axis || n.input_size() < 2) return false;
  const auto indices = known_int64(c, n, n.input(1));
  return indices && indices->rank() <= 1 && indices->numel() == 1 && picks_last(indices->data<std::int64_t>()[0], it);
}

// One axis, step 1, from the last iteration to (at least) the end.
bool slice_reads_last(const NodeContext& c, const NodeProto& n, std::int64_t axis, const Iterations& it) {
  std::optional<std::vector<std::int64_t>> starts, ends, axes, steps;
  if (c.opset() < 10) {
    starts = ints_attribute(n, "starts"), ends = ints_attribute(n, "ends"), axes = ints_attribute(n, "axes");
    steps = std::vector<std::int64_t>{};
  } else {
    starts = optional_ints(c, n, 1), ends = optional_ints(c, n, 2), axes = optional_ints(c, n, 3);
    steps = optional_ints(c, n, 4);
  }
  if (!starts || !ends || !axes || !steps || starts->size() != 1 || ends->size() != 1) return false;
  if ((axes->empty() ? 0 : axes->front()) != axis || axes->size() > 1) return false;
  if (!steps->empty() && (steps->size() != 1 || steps->front() != 1)) return false;
  return picks_last(starts->front(), it) && ends->front() >= it.exactly.value_or(it.at_most);
}

bool reads_last(const NodeContext& c, const NodeProto& reader, std::int64_t axis, const Iterations& it) {
  return reader.op_type() == "Gather" ? gather_reads_last(c, reader, axis, it) : slice_reads_last(c, reader, axis, it);
}

std::int64_t entry(const std::vector<std::int64_t>& values, std::size_t k) { return k < values.size() ? values[k] : 0; }

}  // namespace

LastReads find_last_reads(const GraphProto& graph, std::int64_t opset) {
  LastReads out;
  find_in_graph(graph, opset, {}, out);
  return out;
}

std::vector<Keep> last_read_outputs(const NodeContext& c, std::size_t count, const std::vector<std::int64_t>& axes,
                                    const std::vector<std::int64_t>& directions, const Iterations& iterations) {
  std::vector<Keep> keep(count, Keep::all);
  const bool may_run_none = iterations.at_most < 1 || (iterations.exactly && *iterations.exactly < 1);
  const auto found = c.last_reads().by_scan_node.find(&c.node());
  if (!c.run_options().keep_last || may_run_none || found == c.last_reads().by_scan_node.end()) return keep;
  for (const auto& [k, readers] : found->second) {
    const std::int64_t axis = entry(axes, k);
    if (k >= count || entry(directions, k) != 0) continue;  // prepended: the last is the first iteration's
    if (std::all_of(readers.begin(), readers.end(), [&](const NodeProto* r) { return reads_last(c, *r, axis, iterations); }))
      keep[k] = Keep::last;
  }
  return keep;
}

Var last_read_stand_in(const NodeContext& c, std::size_t output, const Var& element, std::int64_t axis) {
  const std::int64_t at = normalized_axis(c, axis, element.rank() + 1);
  c.mark_last_only(output, at);
  return unsqueeze(element, at);
}

Var read_last(const NodeProto& reader, const Var& stand_in, std::int64_t axis, const Var& gather_indices) {
  if (reader.op_type() == "Gather" && gather_indices.rank() == 0) return squeeze(stand_in, axis);
  return stand_in;
}

}  // namespace recur::onnx_io::detail
