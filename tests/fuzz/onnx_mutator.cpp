// The ONNX-aware mutations (onnx_mutator.hpp). Each one first takes a view of the model
// (every graph with the names it sees, every node, attribute, tensor and value info), then
// changes one thing; pointers into the model are not kept from one mutation to the next.
#include "onnx_mutator.hpp"

#include <algorithm>
#include <cstring>
#include <set>
#include <utility>

namespace recur::fuzz {

namespace {

// A graph of the model, with the value names a node in it may read: its own inputs,
// initializers and node outputs, and those of the graphs around it (a body graph reads
// its enclosing scopes).
struct Graph {
  ::onnx::GraphProto* proto;
  std::vector<std::string> names;
};

struct View {
  std::vector<Graph> graphs;  // [0] is the main graph, then body graphs depth first
  std::vector<::onnx::NodeProto*> nodes;
  std::vector<std::size_t> node_graph;  // the index in `graphs` of each node's graph
  std::vector<::onnx::AttributeProto*> attributes;
  std::vector<::onnx::TensorProto*> tensors;           // initializers and tensor attributes
  std::vector<::onnx::ValueInfoProto*> value_infos;    // graph inputs, outputs, value_info
  std::vector<std::string> op_types;                   // those the model has
  std::vector<std::string> dictionary;                 // every name above, for string fields
};

// Attribute names recur's ops read, so that a renamed or added attribute is often one that
// means something.
const std::vector<std::string> attribute_names = {
    "axis", "axes", "keepdims", "perm", "to", "direction", "hidden_size", "activations", "activation_alpha",
    "activation_beta", "clip", "layout", "linear_before_reset", "input_forget", "body", "then_branch",
    "else_branch", "num_scan_inputs", "scan_input_axes", "scan_output_axes", "scan_input_directions",
    "scan_output_directions", "split", "starts", "ends", "steps", "transA", "transB", "alpha", "beta",
    "value", "value_float", "value_ints", "allowzero", "noop_with_empty_axes", "exclusive", "reverse",
    "batch_dims", "reduction", "ignore_index", "new_axis", "dtype", "mode", "select_last_index"};

// Element types worth a tensor or a value info: those recur holds, the ones it converts,
// the ones it refuses, and nonsense.
const std::int32_t element_types[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 99, -1};

void visit_graph(::onnx::GraphProto* g, const std::vector<std::string>& outer, View& v) {
  Graph entry{g, outer};
  for (auto& in : *g->mutable_input()) {
    entry.names.push_back(in.name());
    v.value_infos.push_back(&in);
  }
  for (auto& out : *g->mutable_output()) v.value_infos.push_back(&out);
  for (auto& info : *g->mutable_value_info()) v.value_infos.push_back(&info);
  for (auto& init : *g->mutable_initializer()) {
    entry.names.push_back(init.name());
    v.tensors.push_back(&init);
  }
  for (const auto& node : g->node())
    for (const auto& out : node.output()) entry.names.push_back(out);
  const std::size_t index = v.graphs.size();
  v.graphs.push_back(entry);
  for (auto& node : *g->mutable_node()) {
    v.nodes.push_back(&node);
    v.node_graph.push_back(index);
    v.op_types.push_back(node.op_type());
    for (auto& a : *node.mutable_attribute()) {
      v.attributes.push_back(&a);
      if (a.has_t()) v.tensors.push_back(a.mutable_t());
      for (auto& t : *a.mutable_tensors()) v.tensors.push_back(&t);
      // The names by value: visiting a body graph grows v.graphs.
      const std::vector<std::string> scope = v.graphs[index].names;
      if (a.has_g()) visit_graph(a.mutable_g(), scope, v);
      for (auto& body : *a.mutable_graphs()) visit_graph(&body, scope, v);
    }
  }
}

View view_of(::onnx::ModelProto& model) {
  View v;
  visit_graph(model.mutable_graph(), {}, v);
  std::set<std::string> words(attribute_names.begin(), attribute_names.end());
  for (const auto& g : v.graphs) words.insert(g.names.begin(), g.names.end());
  for (const auto* info : v.value_infos) words.insert(info->name());
  words.insert(v.op_types.begin(), v.op_types.end());
  for (const auto* a : v.attributes) words.insert(a->name());
  v.dictionary.assign(words.begin(), words.end());
  std::sort(v.op_types.begin(), v.op_types.end());
  v.op_types.erase(std::unique(v.op_types.begin(), v.op_types.end()), v.op_types.end());
  return v;
}

// A name no value has yet, or one of a few that collide with each other.
std::string fresh_name(Rng& rng) { return "fz" + std::to_string(rng.below(std::size_t{6})); }

// The last node of `g` moved to position `to`, the others keeping their order.
void move_last_node(::onnx::GraphProto* g, int to) {
  auto* nodes = g->mutable_node();
  for (int i = nodes->size() - 1; i > to; --i) nodes->SwapElements(i, i - 1);
}

// A node input or output, or a graph output, renamed to a value that exists (or to "" for
// an absent optional input, or to a fresh name).
bool rewire(View& v, Rng& rng) {
  if (rng.one_in(5)) {
    Graph& g = rng.pick(v.graphs);
    if (g.proto->output_size() == 0 || g.names.empty()) return false;
    g.proto->mutable_output(rng.below(g.proto->output_size()))->set_name(rng.pick(g.names));
    return true;
  }
  if (v.nodes.empty()) return false;
  const std::size_t k = rng.below(v.nodes.size());
  ::onnx::NodeProto* node = v.nodes[k];
  const Graph& g = v.graphs[v.node_graph[k]];
  if (node->input_size() > 0 && (node->output_size() == 0 || !rng.one_in(3))) {
    std::string name = rng.one_in(10) || g.names.empty() ? std::string() : rng.pick(g.names);
    if (rng.one_in(6)) node->add_input(std::move(name));  // one input too many, or an optional one
    else node->set_input(rng.below(node->input_size()), std::move(name));
    return true;
  }
  if (node->output_size() == 0) return false;
  // An existing name makes a value defined twice (or, in a body, shadow an outer one).
  node->set_output(rng.below(node->output_size()), rng.one_in(2) || g.names.empty() ? fresh_name(rng) : rng.pick(g.names));
  return true;
}

// A copy of a node (body graphs included) inserted anywhere in any graph, a body of its
// own included.
bool copy_node(View& v, Rng& rng) {
  if (v.nodes.empty()) return false;
  // Copied out first: the destination may lie inside the node being copied.
  ::onnx::NodeProto copy = *rng.pick(v.nodes);
  ::onnx::GraphProto* dest = rng.pick(v.graphs).proto;
  const int at = rng.below(dest->node_size() + 1);
  *dest->add_node() = std::move(copy);
  move_last_node(dest, at);
  return true;
}

// A new node of a random op type reading existing values, often made a graph output (so
// that its value is returned and backpropagated through).
bool add_node(View& v, Rng& rng, const std::vector<std::string>& op_types) {
  const std::size_t gi = rng.below(v.graphs.size());
  Graph& g = v.graphs[gi];
  ::onnx::NodeProto node;
  node.set_op_type(!op_types.empty() && (v.op_types.empty() || rng.one_in(2)) ? rng.pick(op_types)
                                                                                 : rng.pick(v.op_types));
  for (int k = rng.below(4); k >= 0 && !g.names.empty(); --k) node.add_input(rng.pick(g.names));
  const std::string out = "fz_new" + std::to_string(rng.below(std::size_t{4}));
  node.add_output(out);
  if (rng.one_in(4)) node.add_output(fresh_name(rng));
  // Attributes that suit the op type: those of a node of the same type, when there is one.
  std::vector<const ::onnx::NodeProto*> same;
  for (const auto* n : v.nodes)
    if (n->op_type() == node.op_type()) same.push_back(n);
  if (!same.empty() && !rng.one_in(3)) *node.mutable_attribute() = rng.pick(same)->attribute();
  ::onnx::GraphProto* dest = g.proto;
  const int at = rng.one_in(2) ? dest->node_size() : rng.below(dest->node_size() + 1);
  *dest->add_node() = std::move(node);
  move_last_node(dest, at);
  if (!rng.one_in(3)) {
    ::onnx::ValueInfoProto* info = dest->add_output();
    info->set_name(out);
    // Typed like another value of the model, its shape dropped (it is rarely the same).
    if (!v.value_infos.empty()) {
      *info->mutable_type() = rng.pick(v.value_infos)->type();
      if (info->type().has_tensor_type() && !rng.one_in(4)) info->mutable_type()->mutable_tensor_type()->clear_shape();
    } else {
      info->mutable_type()->mutable_tensor_type()->set_elem_type(::onnx::TensorProto::FLOAT);
    }
  }
  return true;
}

// An attribute (a body graph with it) copied onto another node, replacing the one of the
// same name there.
bool copy_attribute(View& v, Rng& rng) {
  if (v.attributes.empty() || v.nodes.empty()) return false;
  ::onnx::AttributeProto copy = *rng.pick(v.attributes);
  ::onnx::NodeProto* dest = rng.pick(v.nodes);
  for (auto& a : *dest->mutable_attribute()) {
    if (a.name() == copy.name()) {
      a = std::move(copy);
      return true;
    }
  }
  *dest->add_attribute() = std::move(copy);
  return true;
}

// A body graph replaced by a copy of another graph of the model (the main graph too).
bool swap_body(View& v, Rng& rng) {
  std::vector<::onnx::GraphProto*> bodies;
  for (auto* a : v.attributes) {
    if (a->has_g()) bodies.push_back(a->mutable_g());
    for (auto& body : *a->mutable_graphs()) bodies.push_back(&body);
  }
  if (bodies.empty()) return false;
  ::onnx::GraphProto copy = *rng.pick(v.graphs).proto;
  *rng.pick(bodies) = std::move(copy);
  return true;
}

bool change_op_type(View& v, Rng& rng, const std::vector<std::string>& op_types) {
  if (v.nodes.empty()) return false;
  const auto& from = !op_types.empty() && rng.one_in(2) ? op_types : v.op_types;
  if (from.empty()) return false;
  rng.pick(v.nodes)->set_op_type(rng.pick(from));
  return true;
}

// The typed values of a tensor written as raw_data (little-endian, as ONNX stores it),
// which puts the byte-length checks of the reader in play.
void typed_to_raw(::onnx::TensorProto* t) {
  std::string raw;
  const auto append = [&raw](const auto& values) {
    for (const auto x : values) raw.append(reinterpret_cast<const char*>(&x), sizeof x);
  };
  if (t->float_data_size() > 0) append(t->float_data());
  else if (t->double_data_size() > 0) append(t->double_data());
  else if (t->int64_data_size() > 0) append(t->int64_data());
  else if (t->int32_data_size() > 0) append(t->int32_data());
  else if (t->uint64_data_size() > 0) append(t->uint64_data());
  t->clear_float_data();
  t->clear_double_data();
  t->clear_int64_data();
  t->clear_int32_data();
  t->clear_uint64_data();
  t->set_raw_data(std::move(raw));
}

// A tensor (initializer or attribute) whose data_type, dims or data no longer agree:
// raw_data shorter than one element or not a multiple of the element size, dims of huge or
// negative extent, values stored in the typed field of another type, external data.
bool mutate_tensor(View& v, Rng& rng) {
  if (v.tensors.empty()) return false;
  ::onnx::TensorProto* t = rng.pick(v.tensors);
  switch (rng.below(8)) {
    case 0: t->set_data_type(element_types[rng.below(std::size(element_types))]); return true;
    case 1: {
      if (t->dims_size() == 0) return false;
      const int d = rng.below(t->dims_size());
      t->set_dims(d, interesting_integer(rng, t->dims(d)));
      return true;
    }
    case 2:
      if (rng.one_in(2) || t->dims_size() == 0) {
        t->add_dims(rng.one_in(2) ? 1 : interesting_integer(rng, 1));
      } else {
        t->mutable_dims()->SwapElements(rng.below(t->dims_size()), t->dims_size() - 1);
        t->mutable_dims()->RemoveLast();
      }
      return true;
    case 3:
    case 4: {
      if (!t->has_raw_data()) typed_to_raw(t);
      std::string raw = t->raw_data();
      raw.resize(interesting_length(rng, raw.size()), '\x01');
      t->set_raw_data(std::move(raw));
      return true;
    }
    case 5:
      // Values in a typed field while raw_data is there too, or in the wrong typed field.
      switch (rng.below(5)) {
        case 0: t->add_float_data(1.5f); break;
        case 1: t->add_double_data(-2.0); break;
        case 2: t->add_int64_data(interesting_integer(rng, 3)); break;
        case 3: t->add_int32_data(static_cast<std::int32_t>(interesting_integer(rng, 3))); break;
        default: t->add_string_data("s"); break;
      }
      if (rng.one_in(2)) t->clear_raw_data();
      return true;
    case 6:
      typed_to_raw(t);
      return true;
    default:
      if (!rng.one_in(4)) return false;  // rarely: the reader must refuse it, never open a file
      t->set_data_location(::onnx::TensorProto::EXTERNAL);
      if (rng.one_in(2)) {
        auto* entry = t->add_external_data();
        entry->set_key("location");
        entry->set_value("fuzz_no_such_file.bin");
      }
      return true;
  }
}

// A graph input's or output's type changed: its element type, a dimension, its rank, or
// tensor made sequence and back.
bool mutate_value_info(View& v, Rng& rng) {
  if (v.value_infos.empty()) return false;
  ::onnx::ValueInfoProto* info = rng.pick(v.value_infos);
  ::onnx::TypeProto* type = info->mutable_type();
  ::onnx::TypeProto_Tensor* tensor = type->has_sequence_type() ? type->mutable_sequence_type()->mutable_elem_type()->mutable_tensor_type()
                                                               : type->mutable_tensor_type();
  switch (rng.below(6)) {
    case 0: tensor->set_elem_type(element_types[rng.below(std::size(element_types))]); return true;
    case 1: {
      auto* shape = tensor->mutable_shape();
      if (shape->dim_size() == 0) return false;
      auto* dim = shape->mutable_dim(rng.below(shape->dim_size()));
      if (rng.one_in(3)) dim->set_dim_param("N");
      else dim->set_dim_value(interesting_integer(rng, dim->dim_value()));
      return true;
    }
    case 2: {
      auto* shape = tensor->mutable_shape();
      if (rng.one_in(2) || shape->dim_size() == 0) {
        shape->add_dim()->set_dim_value(rng.below(std::size_t{4}));
      } else {
        shape->mutable_dim()->SwapElements(rng.below(shape->dim_size()), shape->dim_size() - 1);
        shape->mutable_dim()->RemoveLast();
      }
      return true;
    }
    case 3: tensor->clear_shape(); return true;
    case 4: {
      ::onnx::TypeProto copy = *type;  // copied out: the oneof is cleared when switched
      if (copy.has_sequence_type()) *type = copy.sequence_type().elem_type();
      else *type->mutable_sequence_type()->mutable_elem_type() = std::move(copy);
      return true;
    }
    default: info->clear_type(); return true;
  }
}

// The opset of the default domain (the importer picks each op's version by it), or the IR
// version.
bool mutate_versions(::onnx::ModelProto& model, Rng& rng) {
  if (rng.one_in(4)) {
    model.set_ir_version(rng.one_in(2) ? 3 + static_cast<std::int64_t>(rng.below(std::size_t{8})) : interesting_integer(rng, model.ir_version()));
    return true;
  }
  for (auto& opset : *model.mutable_opset_import()) {
    if (opset.domain().empty() || opset.domain() == "ai.onnx") {
      opset.set_version(rng.one_in(4) ? interesting_integer(rng, opset.version()) : 1 + static_cast<std::int64_t>(rng.below(std::size_t{18})));
      return true;
    }
  }
  auto* opset = model.add_opset_import();
  opset->set_version(1 + static_cast<std::int64_t>(rng.below(std::size_t{18})));
  return true;
}

// A field anywhere in the model changed by reflection, or one it did not have set.
bool mutate_any_field(::onnx::ModelProto& model, View& v, Rng& rng, const ByteMutator& bytes) {
  MutationContext ctx{rng, v.dictionary, bytes};
  std::vector<FieldRef> fields = set_fields(model);
  if (fields.empty() || rng.one_in(6)) return add_field(fields.empty() ? model : *rng.pick(fields).message, ctx);
  return mutate_field(rng.pick(fields), ctx);
}

bool mutate_once(::onnx::ModelProto& model, Rng& rng, const std::vector<std::string>& op_types,
                 const ByteMutator& bytes) {
  View v = view_of(model);
  // Weights out of 100: the reflection mutations reach every field, the others build graphs.
  const std::size_t roll = rng.below(std::size_t{100});
  if (roll < 30) return mutate_any_field(model, v, rng, bytes);
  if (roll < 44) return rewire(v, rng);
  if (roll < 51) return copy_node(v, rng);
  if (roll < 60) return add_node(v, rng, op_types);
  if (roll < 66) return copy_attribute(v, rng);
  if (roll < 70) return swap_body(v, rng);
  if (roll < 78) return change_op_type(v, rng, op_types);
  if (roll < 88) return mutate_tensor(v, rng);
  if (roll < 96) return mutate_value_info(v, rng);
  return mutate_versions(model, rng);
}

}  // namespace

void mutate_model(::onnx::ModelProto& model, Rng& rng, const std::vector<std::string>& op_types,
                  const ByteMutator& bytes) {
  // Mostly one mutation, so that coverage is credited to it; sometimes a few at once.
  const int wanted = rng.one_in(2) ? 1 : 2 + rng.below(3);
  int done = 0;
  for (int attempt = 0; done < wanted && attempt < 4 * wanted; ++attempt)
    if (mutate_once(model, rng, op_types, bytes)) ++done;
}

bool cross_over(::onnx::ModelProto& model, const ::onnx::ModelProto& other, Rng& rng) {
  const auto& src = other.graph();
  if (src.node_size() == 0) return false;
  ::onnx::GraphProto* dst = model.mutable_graph();
  const int begin = rng.below(src.node_size());
  const int count = 1 + rng.below(std::min(8, src.node_size() - begin));
  std::set<std::string> defined;
  for (const auto& in : dst->input()) defined.insert(in.name());
  for (const auto& init : dst->initializer()) defined.insert(init.name());
  for (const auto& node : dst->node()) defined.insert(node.output().begin(), node.output().end());
  const int at = rng.below(dst->node_size() + 1);
  for (int k = 0; k < count; ++k) {
    const auto& node = src.node(begin + k);
    // What the spliced nodes read and `model` does not define comes along from `other`.
    for (const auto& name : node.input()) {
      if (name.empty() || !defined.insert(name).second) continue;
      for (const auto& init : src.initializer())
        if (init.name() == name) *dst->add_initializer() = init;
      for (const auto& in : src.input())
        if (in.name() == name) *dst->add_input() = in;
    }
    defined.insert(node.output().begin(), node.output().end());
    *dst->add_node() = node;
    move_last_node(dst, at + k);
  }
  // The last spliced node's first output returned too, typed as `other` declares it.
  const auto& last = src.node(begin + count - 1);
  if (last.output_size() > 0 && rng.one_in(2)) {
    for (const auto* list : {&src.output(), &src.value_info()}) {
      for (const auto& info : *list) {
        if (info.name() == last.output(0)) {
          *dst->add_output() = info;
          return true;
        }
      }
    }
  }
  return true;
}

}  // namespace recur::fuzz
