// The step function of a scan recorded for export (export_step_trace_detail.hpp).
#include <recur/ops/onnx/export/export_step_trace_detail.hpp>

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/recording_scope.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/error.hpp>
#include <recur/core/random.hpp>

namespace recur::onnx_io::detail {
namespace {

// Random values in [0.25, 1): distinct, positive (log and sqrt of a stand-in are defined),
// and different in the two traces, so that a constant computed from them (a comparison
// mask) shows as a difference (trace_step).
Tensor stand_in(const Shape& shape, DType dtype, Generator& gen) { return uniform(shape, 0.25, 1.0, gen, dtype); }

// Sees every op the step records and gives each Shared it reads a stand-in node.
class TraceScope final : public RecordingScope {
 public:
  TraceScope(std::string_view op, Tape& tape, Generator& gen, StepTrace& trace, std::vector<TracedOp>& seen)
      : op_(op), tape_(tape), gen_(gen), trace_(trace), seen_(seen) {
    TapeAccess::push_scope(tape_, this);
  }
  ~TraceScope() { TapeAccess::pop_scope(tape_); }
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

  bool checks_inputs() const override { return true; }

  // One stand-in per Shared: a random variable of its shape for a floating one; an integer
  // one (indices) keeps its value, which ops on it need.
  std::optional<std::uint32_t> redirect_read(const Shared& shared) const override {
    for (const auto& [node, s] : trace_.parameters)
      if (s == shared) return node;
    const Var v = is_floating(shared.dtype()) ? tape_.variable(stand_in(shared.shape(), shared.dtype(), gen_))
                                              : tape_.constant(shared.value());
    trace_.parameters.emplace(v.id(), shared);
    return v.id();
  }

  // record() asks just before it pushes the op's node, which is then the next one.
  void check_inputs(const Tape& tape, std::string_view op, std::span<const std::uint32_t> inputs) const override {
    seen_.push_back({std::string(op), std::vector<std::uint32_t>(inputs.begin(), inputs.end()), tape.size()});
  }
  void check_read(const Tape&, const Shared&, const std::uint32_t*) const override {}  // every read is redirected

  void take_update(const Shared& shared, const Var&) override {
    fail<ValueError>(op_, "the step changes shared variable '", shared.name(),
                     "' (a random draw?): an ONNX Scan body has no side effects");
  }

 private:
  std::string_view op_;
  Tape& tape_;
  Generator& gen_;
  StepTrace& trace_;
  std::vector<TracedOp>& seen_;
};

// Keeps the ops that depend on an input or a parameter; the others are constants.
void keep_dynamic_ops(std::string_view op, StepTrace& trace, const std::vector<TracedOp>& seen) {
  std::set<std::uint32_t> dynamic(trace.inputs.begin(), trace.inputs.end());
  for (const auto& entry : trace.parameters) dynamic.insert(entry.first);
  std::uint32_t next = 0;
  for (const TracedOp& o : seen) {
    if (o.node < next || o.node >= trace.tape->size())
      fail<ValueError>(op, "op '", o.name, "' of the step did not record one node of its own");
    next = o.node + 1;
    if (std::none_of(o.inputs.begin(), o.inputs.end(), [&](std::uint32_t i) { return dynamic.contains(i); }))
      continue;
    dynamic.insert(o.node);
    trace.op_of.emplace(o.node, trace.ops.size());
    trace.ops.push_back(o);
    if (const auto d = TapeAccess::describe(*trace.tape, o.node)) trace.ops.back().attributes = d->attributes;
  }
  // A node that needs a gradient came from the inputs; unless it is one of the above, it
  // was recorded where this scope could not see it.
  for (std::uint32_t n = 0; n < trace.tape->size(); ++n)
    if (!dynamic.contains(n) && TapeAccess::requires_grad(*trace.tape, n))
      fail<ValueError>(op, "the step records node ", n, " out of the export's sight (a scan or loop inside the "
                       "step?): an ONNX Scan body is one flat graph of ops");
}

StepTrace trace_once(std::string_view op, const OnnxBody& body, const std::vector<Tensor>& examples,
                     std::uint64_t seed) {
  StepTrace trace;
  trace.tape = std::make_unique<Tape>();
  Tape& tape = *trace.tape;
  EnableGrad grad;  // inputs must need gradients: that is how ops on them are told from constants
  Generator gen(seed);
  std::vector<Var> inputs;
  for (const Tensor& e : examples) {
    // Integer inputs (token ids) keep the example's values: the ops on them need indices.
    inputs.push_back(is_floating(e.dtype()) ? tape.variable(stand_in(e.shape(), e.dtype(), gen)) : tape.constant(e));
    trace.inputs.push_back(inputs.back().id());
  }
  std::vector<TracedOp> seen;
  std::vector<Var> outputs;
  {
    TraceScope scope(op, tape, gen, trace, seen);
    outputs = body(inputs);
  }
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    if (!outputs[k].defined() || !TapeAccess::owns(tape, outputs[k]))
      fail<ValueError>(op, "output ", k, " of the step is not a value it computed on the current tape");
    trace.outputs.push_back(outputs[k].id());
  }
  keep_dynamic_ops(op, trace, seen);
  return trace;
}

// What differs between two traces of one step, or "" when nothing does.
std::string difference(const StepTrace& a, const StepTrace& b) {
  if (std::string ops = op_difference(a, b); !ops.empty()) return ops + " for different values (control flow on values?)";
  for (std::size_t k = 0; k < a.ops.size(); ++k)
    if (a.ops[k].attributes != b.ops[k].attributes)
      return "the parameters of op '" + a.ops[k].name + "' (node " + std::to_string(a.ops[k].node) +
             ") differ for different values (computed from the step's inputs?)";
  for (std::uint32_t n = 0; n < a.tape->size(); ++n)
    if (a.kind(n) == TracedKind::constant && !identical(a.value(n), b.value(n), true))
      return "node " + std::to_string(n) + " is a constant computed from the step's inputs (a comparison mask or "
             "another value without gradient?), which an ONNX body cannot hold";
  return "";
}

}  // namespace

bool identical(const Tensor& a, const Tensor& b, bool nan_equal) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const auto x = to_vector<double>(a), y = to_vector<double>(b);
  return std::equal(x.begin(), x.end(), y.begin(),
                    [&](double p, double q) { return p == q || (nan_equal && std::isnan(p) && std::isnan(q)); });
}

std::string op_difference(const StepTrace& a, const StepTrace& b) {
  if (a.tape->size() != b.tape->size() || a.ops.size() != b.ops.size() || a.outputs != b.outputs)
    return "it records different ops";
  for (std::size_t k = 0; k < a.ops.size(); ++k)
    if (a.ops[k].name != b.ops[k].name || a.ops[k].inputs != b.ops[k].inputs || a.ops[k].node != b.ops[k].node)
      return "op '" + a.ops[k].name + "' (node " + std::to_string(a.ops[k].node) + ") differs";
  return "";
}

TracedKind StepTrace::kind(std::uint32_t node) const {
  if (std::find(inputs.begin(), inputs.end(), node) != inputs.end()) return TracedKind::input;
  if (parameters.contains(node)) return TracedKind::parameter;
  if (op_of.contains(node)) return TracedKind::op;
  return TracedKind::constant;
}

const Tensor& StepTrace::value(std::uint32_t node) const { return TapeAccess::node_value(*tape, node); }

StepTrace trace_step(std::string_view op, const OnnxBody& body, const std::vector<Tensor>& input_examples) {
  StepTrace first = trace_once(op, body, input_examples, 0x5eed);
  const StepTrace second = trace_once(op, body, input_examples, 0x5eed + 1);
  if (const std::string what = difference(first, second); !what.empty())
    fail<ValueError>(op, "the step cannot be written as an ONNX Scan body: ", what);
  return first;
}

}  // namespace recur::onnx_io::detail
