// Control flow: If and Loop. Their body graphs are recorded as recur ops like the main
// graph (reading outer-scope values, gradients reaching them). Loop is unrolled on the
// tape, one recorded body per iteration, because its trip count and `cond` are known only
// while it runs; it carries tensors and sequences.
#include <limits>

#include <recur/core/creation.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/onnx/op_helpers_detail.hpp>
#include <recur/ops/onnx/registry_detail.hpp>

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

std::vector<Value> loop_import(const NodeContext& c) {
  const auto& body = c.graph_attr("body");
  const std::size_t carried = c.input_count() < 2 ? 0 : c.input_count() - 2;
  if (static_cast<std::size_t>(body.input_size()) != carried + 2)
    c.invalid("the body takes ", body.input_size(), " inputs, the loop carries ", carried, " values (plus 2)");
  if (static_cast<std::size_t>(body.output_size()) < carried + 1)
    c.invalid("the body gives ", body.output_size(), " outputs, fewer than cond and ", carried, " carried values");
  const std::size_t scanned = static_cast<std::size_t>(body.output_size()) - 1 - carried;
  // M is read as an integer: exporters write INT64_MAX for "no limit", which a double cannot hold.
  const std::int64_t trips = c.has_input(0) ? integer_value(c, c.input(0), "M") : std::numeric_limits<std::int64_t>::max();
  bool go_on = c.has_input(1) ? scalar_value(c, c.input(1), "cond") != 0 : true;
  if (!c.has_input(0) && !c.has_input(1)) c.unsupported("a loop with neither a trip count nor a condition never ends");
  std::vector<Value> state(c.values().begin() + 2, c.values().end());
  std::vector<std::vector<Var>> scans(scanned);
  for (std::int64_t i = 0; i < trips && go_on; ++i) {
    std::vector<Value> args{int64_scalar(i), int64_scalar(go_on ? 1 : 0)};
    args.insert(args.end(), state.begin(), state.end());
    const auto outputs = c.run_body(body, args);
    go_on = c.tensor_of(outputs[0], "the body's cond").value().item<double>() != 0;
    std::copy(outputs.begin() + 1, outputs.begin() + 1 + static_cast<std::ptrdiff_t>(carried), state.begin());
    for (std::size_t k = 0; k < scanned; ++k)
      scans[k].push_back(c.tensor_of(outputs[1 + carried + k], "a scan output of the body"));
  }
  std::vector<Value> out = state;
  for (const auto& pieces : scans) {
    if (pieces.empty()) c.unsupported("scan outputs of a loop that ran no iteration (their shape is unknown)");
    out.push_back(stack(pieces, 0));
  }
  return out;
}

}  // namespace

void add_control_ops(Registry& r) {
  r.add("If", {.run_values = if_import});
  r.add("Loop", {.run_values = loop_import});
}

}  // namespace recur::onnx::detail
