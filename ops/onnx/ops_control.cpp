// Control flow: If and Loop. Their body graphs are recorded as recur ops like the main
// graph (reading outer-scope values, gradients reaching them). Loop runs on recur's scan
// engine through the ONNX face's onnx::loop (ops/scan/onnx.hpp): a `cond` the body computes
// is the engine's `until`, so the run's truncation and recomputation (RunOptions) apply to
// it. Two kinds of loop the engine's fixed-shape steps cannot hold run unrolled on the tape
// instead, one recorded body per iteration: loops that carry sequences, and loops whose
// carried tensors change shape from one iteration to the next (both valid ONNX); those
// refuse truncation and recomputation.
#include <limits>

#include <recur/core/creation.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/op_helpers_detail.hpp>
#include <recur/ops/onnx/registry_detail.hpp>
#include <recur/ops/scan/onnx.hpp>

namespace recur::onnx::detail {
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

bool carries_sequences(const LoopNode& loop) {
  return std::any_of(loop.carried.begin(), loop.carried.end(),
                     [](const Value& v) { return std::holds_alternative<Sequence>(v); });
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

// Thrown by the engine's body when a carried tensor changes shape: the loop runs unrolled.
struct CarriedShapeChanged {};

std::vector<Value> engine_loop(const NodeContext& c, const LoopNode& loop) {
  std::vector<Var> initial;
  for (const auto& v : loop.carried) initial.push_back(std::get<Var>(v));
  const Body step = [&](std::span<const Var> args) {
    std::vector<Var> out = c.run_tensor_body(loop.body, args);
    for (std::size_t j = 0; j < initial.size(); ++j)
      if (out[1 + j].shape() != initial[j].shape() || out[1 + j].dtype() != initial[j].dtype())
        throw CarriedShapeChanged{};
    return out;
  };
  const RunOptions& o = c.run_options();
  if (!loop.trips && (o.checkpoint.automatic || o.checkpoint.revolve))
    c.invalid("Checkpoint::auto_sqrt, snapshots and budget plan for the number of iterations, and this loop has no ",
              "trip count M (or M = INT64_MAX, no bound): use Checkpoint::every_k");
  const LoopResult r = ::recur::onnx::loop(
      step, initial,
      {.max_trip_count = loop.trips, .cond = loop.cond, .truncate_gradient = o.truncate_gradient, .checkpoint = o.checkpoint});
  std::vector<Value> out(r.final_states.begin(), r.final_states.end());
  out.insert(out.end(), r.scan_outputs.begin(), r.scan_outputs.end());
  return out;
}

std::vector<Value> loop_import(const NodeContext& c) {
  const LoopNode loop = read_loop(c);
  if (carries_sequences(loop)) return unrolled_loop(c, loop, "carries sequences");
  try {
    return engine_loop(c, loop);
  } catch (const CarriedShapeChanged&) {  // the engine has taken its iterations off the tape
    return unrolled_loop(c, loop, "changes the shape of a carried value");
  }
}

}  // namespace

void add_control_ops(Registry& r) {
  r.add("If", {.run_values = if_import});
  r.add("Loop", {.run_values = loop_import});
}

}  // namespace recur::onnx::detail
