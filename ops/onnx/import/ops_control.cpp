// Control flow: If and Loop. Their body graphs are recorded as recur ops like the main
// graph (reading outer-scope values, gradients reaching them). Loop runs on recur's scan
// engine through the ONNX face's onnx_loop (ops/scan/onnx.hpp): a `cond` the body computes
// is the engine's `until`, so the run's truncation and recomputation (RunOptions) apply to
// it, and a scan output read only at its last iteration runs with Keep::last
// (last_reads_detail.hpp). A carried sequence that the body only appends one tensor to (a
// SequenceInsert at the back, as PyTorch's scripted loops build their outputs) is a scan
// output of the engine: the loop's sequence is the initial one followed by those tensors.
// Two kinds of loop the engine's fixed-shape steps cannot hold run unrolled on the tape
// instead, one recorded body per iteration: loops that use a carried sequence otherwise or
// append tensors of changing shapes, and loops whose carried tensors change shape from one
// iteration to the next (all valid ONNX); those refuse truncation and recomputation. An
// engine run that finds out it cannot hold the loop takes its iterations off the tape first.
#include <algorithm>
#include <limits>

#include <recur/core/creation.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/scan/onnx_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

std::vector<Value> if_import(const NodeContext& c) {
  const bool then = scalar_value(c, c.input(0), "cond") != 0;
  const auto outputs = c.run_body(c.graph_attr(then ? "then_branch" : "else_branch"), {});
  if (outputs.size() != c.output_count())
    c.invalid("the ", then ? "then" : "else", " branch gives ", outputs.size(), " outputs, the node has ",
              c.output_count());
  return outputs;
}

Var int64_scalar(std::int64_t v) { return constant(full({}, static_cast<double>(v), DType::int64)); }

// What a Loop node asks for: its body, trip count, initial condition and carried values.
struct LoopNode {
  const ::onnx::GraphProto& body;
  std::optional<std::int64_t> trips;  // M; absent: no bound
  bool cond = true;
  std::vector<Value> carried;
  std::size_t scanned = 0;  // the body's scan outputs
};

LoopNode read_loop(const NodeContext& c) {
  LoopNode loop{c.graph_attr("body"), std::nullopt, true, {c.values().begin() + 2, c.values().end()}, 0};
  const std::size_t carried = loop.carried.size();
  if (static_cast<std::size_t>(loop.body.input_size()) != carried + 2)
    c.invalid("the body takes ", loop.body.input_size(), " inputs, the loop carries ", carried, " values (plus 2)");
  if (static_cast<std::size_t>(loop.body.output_size()) < carried + 1)
    c.invalid("the body gives ", loop.body.output_size(), " outputs, fewer than cond and ", carried, " carried values");
  loop.scanned = static_cast<std::size_t>(loop.body.output_size()) - 1 - carried;
  if (!c.has_input(0) && !c.has_input(1)) c.unsupported("a loop with neither a trip count nor a condition never ends");
  // M is read as an integer: exporters write INT64_MAX for "no limit", which a double cannot
  // hold; it is no bound here either (the recomputing policies that plan for M refuse it).
  if (c.has_input(0)) loop.trips = integer_value(c, c.input(0), "M");
  if (loop.trips == std::numeric_limits<std::int64_t>::max()) loop.trips.reset();
  if (c.has_input(1)) loop.cond = scalar_value(c, c.input(1), "cond") != 0;
  return loop;
}

// How often the body (and the bodies inside it) reads `name`, and gives it as an output.
std::size_t uses_of(const ::onnx::GraphProto& body, const std::string& name) {
  std::size_t n = 0;
  for_each_graph(body, [&](const ::onnx::GraphProto& g) {
    n += static_cast<std::size_t>(
        std::count_if(g.output().begin(), g.output().end(), [&](const auto& o) { return o.name() == name; }));
    for (const auto& node : g.node())
      n += static_cast<std::size_t>(std::count(node.input().begin(), node.input().end(), name));
  });
  return n;
}

// Whether the body only appends to carried value j: its input read by nothing but one
// SequenceInsert without a position (at the back), whose result is the carried output and
// is read by nothing else.
bool only_appended(const LoopNode& loop, std::size_t j) {
  const auto at = static_cast<int>(j);
  const std::string& in = loop.body.input(2 + at).name();
  const std::string& out = loop.body.output(1 + at).name();
  if (uses_of(loop.body, in) != 1 || uses_of(loop.body, out) != 1) return false;
  return std::any_of(loop.body.node().begin(), loop.body.node().end(), [&](const ::onnx::NodeProto& n) {
    return n.op_type() == "SequenceInsert" && in_default_domain(n.domain()) && n.input_size() == 2 &&
           n.input(0) == in && n.output_size() == 1 && n.output(0) == out;
  });
}

// Per carried value, whether it is a sequence the body only appends to; nullopt when the
// loop carries a sequence it uses otherwise.
std::optional<std::vector<bool>> appended_sequences(const LoopNode& loop) {
  std::vector<bool> appended(loop.carried.size(), false);
  for (std::size_t j = 0; j < loop.carried.size(); ++j) {
    if (!std::holds_alternative<Sequence>(loop.carried[j])) continue;
    if (!only_appended(loop, j)) return std::nullopt;
    appended[j] = true;
  }
  return appended;
}

// Unrolled: the body recorded once per iteration, carried values of any kind and shape.
std::vector<Value> unrolled_loop(const NodeContext& c, const LoopNode& loop, const std::string& why) {
  const RunOptions& o = c.run_options();
  if (o.truncate_gradient >= 0 || o.checkpoint.recomputes())
    c.unsupported("truncate_gradient and checkpoint for a loop that ", why, " (it runs unrolled, not on the scan engine)");
  const std::size_t carried = loop.carried.size();
  const std::int64_t trips = loop.trips.value_or(std::numeric_limits<std::int64_t>::max());
  std::vector<Value> state = loop.carried;
  std::vector<std::vector<Var>> scans(loop.scanned);
  bool go_on = loop.cond;
  for (std::int64_t i = 0; i < trips && go_on; ++i) {
    c.check_iteration(i);
    std::vector<Value> args{int64_scalar(i), int64_scalar(1)};
    args.insert(args.end(), state.begin(), state.end());
    const auto outputs = c.run_body(loop.body, args);
    go_on = c.tensor_of(outputs[0], "the body's cond").value().item<double>() != 0;
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + static_cast<std::ptrdiff_t>(carried), state.begin());
    for (std::size_t k = 0; k < loop.scanned; ++k)
      scans[k].push_back(c.tensor_of(outputs[1 + carried + k], "a scan output of the body"));
  }
  std::vector<Value> out = state;
  for (const auto& pieces : scans) {
    if (pieces.empty()) c.unsupported("scan outputs of a loop that ran no iteration (their shape is unknown)");
    out.push_back(stack(pieces, 0));
  }
  return out;
}

// Thrown by the engine's body when a value changes shape: the loop runs unrolled.
struct RunUnrolled {
  const char* why;
};

// A value's shape and dtype, as its first iteration made it: kept as such, not as that Var,
// whose node a loop without gradients drops after the iteration.
struct Kind {
  Shape shape;
  DType dtype;
};

// `v` must keep the shape and dtype of `first`, those of its first iteration (set then).
void check_kept(const Var& v, std::optional<Kind>& first, const char* why) {
  if (!first) first = Kind{v.shape(), v.dtype()};
  if (v.shape() != first->shape || v.dtype() != first->dtype) throw RunUnrolled{why};
}

// The loop on the engine: its states are the carried tensors; its scan outputs the tensors
// appended to carried sequences (`appended`), then the body's own.
std::vector<Value> engine_loop(const NodeContext& c, const LoopNode& loop, const std::vector<bool>& appended) {
  const std::size_t carried = loop.carried.size();
  std::vector<Var> initial;
  for (std::size_t j = 0; j < carried; ++j)
    if (!appended[j]) initial.push_back(std::get<Var>(loop.carried[j]));
  std::vector<std::optional<Kind>> first(carried);
  for (std::size_t j = 0, t = 0; j < carried; ++j)
    if (!appended[j]) {
      first[j] = Kind{initial[t].shape(), initial[t].dtype()};
      ++t;
    }
  const OnnxBody step = [&](std::span<const Var> args) {  // the iteration, cond, the carried tensors
    c.check_iteration(args[0].value().item<std::int64_t>());
    std::vector<Value> body_args{args[0], args[1]};
    for (std::size_t j = 0, t = 2; j < carried; ++j) body_args.push_back(appended[j] ? Value(Sequence{}) : Value(args[t++]));
    const std::vector<Value> outputs = c.run_body(loop.body, body_args);
    std::vector<Var> out{c.tensor_of(outputs[0], "the body's cond")}, added;
    for (std::size_t j = 0; j < carried; ++j) {
      const Value& v = outputs[1 + j];
      if (!appended[j]) {
        check_kept(out.emplace_back(c.tensor_of(v, "a carried tensor")), first[j], "changes the shape of a carried value");
        continue;
      }
      const auto* grown = std::get_if<Sequence>(&v);
      if (!grown || grown->size() != 1) c.invalid("carried value ", j, " is a sequence the body returns as a tensor");
      check_kept(added.emplace_back(grown->front()), first[j], "appends tensors of changing shapes to a carried sequence");
    }
    out.insert(out.end(), added.begin(), added.end());
    for (std::size_t k = 0; k < loop.scanned; ++k)
      out.push_back(c.tensor_of(outputs[1 + carried + k], "a scan output of the body"));
    return out;
  };
  const RunOptions& o = c.run_options();
  if (!loop.trips && (o.checkpoint.automatic || o.checkpoint.revolve))
    c.invalid("Checkpoint::auto_sqrt, snapshots and budget plan for the number of iterations, and this loop has no ",
              "trip count M (or M = INT64_MAX, no bound): use Checkpoint::every_k");
  // Those policies plan for all M iterations before the first runs: M is bounded first.
  if (loop.trips > 0 && (o.checkpoint.automatic || o.checkpoint.revolve)) c.check_iteration(*loop.trips - 1);
  const std::size_t n_appended = static_cast<std::size_t>(std::count(appended.begin(), appended.end(), true));
  const Iterations iterations{std::nullopt, loop.cond ? loop.trips.value_or(std::numeric_limits<std::int64_t>::max()) : 0};
  std::vector<Keep> keep(n_appended, Keep::all);
  const std::vector<Keep> own = last_read_outputs(c, loop.scanned, {}, {}, iterations);
  keep.insert(keep.end(), own.begin(), own.end());
  const OnnxLoopResult r = recur::detail::onnx_loop_keeping(
      step, initial,
      {.max_trip_count = loop.trips, .cond = loop.cond, .truncate_gradient = o.truncate_gradient, .checkpoint = o.checkpoint},
      keep);
  std::vector<Value> out;
  for (std::size_t j = 0, t = 0, a = 0; j < carried; ++j) {
    if (!appended[j]) {
      out.push_back(r.final_states[t++]);
      continue;
    }
    Sequence grown = std::get<Sequence>(loop.carried[j]);
    const Var& added = r.scan_outputs[a++];
    for (std::int64_t i = 0; i < added.size(0); ++i) grown.push_back(index(added, 0, i));
    out.push_back(grown);
  }
  for (std::size_t k = 0; k < loop.scanned; ++k) {
    const Var& v = r.scan_outputs[n_appended + k];
    out.push_back(own[k] == Keep::last ? last_read_stand_in(c, carried + k, v, 0) : v);
  }
  return out;
}

std::vector<Value> loop_import(const NodeContext& c) {
  const LoopNode loop = read_loop(c);
  const auto appended = appended_sequences(loop);
  if (!appended) return unrolled_loop(c, loop, "uses a carried sequence otherwise than appending to it");
  try {
    return engine_loop(c, loop, *appended);
  } catch (const RunUnrolled& e) {  // the engine has taken its iterations off the tape
    return unrolled_loop(c, loop, e.why);
  }
}

}  // namespace

void add_control_ops(Registry& r) {
  r.add("If", {.run_values = if_import});
  r.add("Loop", {.run_values = loop_import});
}

}  // namespace recur::onnx_io::detail
