// The reverse pass's entry points: backward() and grad() check their arguments here, then
// run the loop in propagate.cpp.
#include <algorithm>
#include <new>

#include <recur/autodiff/tape_access.hpp>
#include <recur/core/creation.hpp>

namespace recur {
namespace {

void check_owned(const Tape& tape, std::string_view op, std::string_view what, const Var& v) {
  if (!v.defined()) fail<TapeError>(op, what, " is an undefined Var");
  v.tape();  // throws for a destroyed tape
  if (!TapeAccess::owns(tape, v)) fail<TapeError>(op, what, " belongs to another tape");
}

struct NodeRange {
  std::uint32_t lo;  // the lowest input: no gradient is needed below it
  std::uint32_t hi;  // the highest output: the pass starts there
};

// grad()'s arguments, checked in order (outputs, their grad_outputs, inputs): all on
// `tape`, scalar outputs unless grad_outputs give each output's shape.
NodeRange check_grad_arguments(const Tape& tape, std::span<const Var> outputs, std::span<const Var> inputs,
                               std::span<const Tensor> grad_outputs) {
  if (outputs.empty()) fail<ValueError>("grad", "no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    fail<ValueError>("grad", outputs.size(), " outputs but ", grad_outputs.size(), " grad_outputs");
  NodeRange range{tape.size(), 0};
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    check_owned(tape, "grad", "an output", outputs[k]);
    const Tensor& v = outputs[k].value();
    if (grad_outputs.empty() && v.numel() != 1)
      fail<GradientError>("grad", "output ", k, " has shape ", to_string(v.shape()),
                          "; pass grad_outputs for non-scalar outputs");
    if (!grad_outputs.empty() && !grad_outputs[k].defined())
      fail<ValueError>("grad", "grad_outputs[", k, "] is undefined (output ", k, " has shape ", to_string(v.shape()), ")");
    if (!grad_outputs.empty() && (grad_outputs[k].shape() != v.shape() || grad_outputs[k].dtype() != v.dtype()))
      fail<ShapeError>("grad", "grad_outputs[", k, "] is ", grad_outputs[k].dtype(), " of shape ",
                       to_string(grad_outputs[k].shape()), " but output ", k, " is ", v.dtype(), " of shape ",
                       to_string(v.shape()));
    range.hi = std::max(range.hi, outputs[k].id());
  }
  for (const auto& in : inputs) {
    check_owned(tape, "grad", "an input", in);
    range.lo = std::min(range.lo, in.id());
  }
  return range;
}

}  // namespace

void Tape::backward(const Var& loss, BackwardOptions options) {
  check_owned(*this, "backward", "the loss", loss);
  const Tensor& v = loss.value();
  if (v.numel() != 1)
    fail<GradientError>("backward", "the loss has shape ", to_string(v.shape()),
                        "; backward of a non-scalar needs a grad_output of that shape");
  backward(loss, ones(v.shape(), v.dtype()), options);
}

void Tape::backward(const Var& output, const Tensor& grad_output, BackwardOptions options) {
  check_owned(*this, "backward", "the output", output);
  const Tensor& v = output.value();
  if (!grad_output.defined()) fail<ValueError>("backward", "grad_output is undefined (output of shape ", to_string(v.shape()), ")");
  if (grad_output.shape() != v.shape() || grad_output.dtype() != v.dtype())
    fail<ShapeError>("backward", "grad_output is ", grad_output.dtype(), " of shape ",
                     to_string(grad_output.shape()), " but the output is ", v.dtype(), " of shape ",
                     to_string(v.shape()));
  if (!nodes_[output.id()].requires_grad)
    fail<GradientError>("backward", "the output does not depend on any variable or Shared that needs a gradient");
  check_versions("backward", std::span<const Var>(&output, 1));
  check_not_consumed(output);
  try {
    backward_to_leaves(output, grad_output, options.retain_graph);
  } catch (const std::bad_alloc&) {  // a container's; a tensor's is a MemoryError already
    fail<MemoryError>("backward", "out of memory (std::bad_alloc) during the backward pass");
  }
}

std::vector<Var> Tape::grad(std::span<const Var> outputs, std::span<const Var> inputs,
                            std::span<const Tensor> grad_outputs, GradOptions options) {
  const NodeRange range = check_grad_arguments(*this, outputs, inputs, grad_outputs);
  check_versions("grad", outputs);
  try {
    return grad_of_inputs(outputs, inputs, grad_outputs, range.lo, range.hi, options.create_graph);
  } catch (const std::bad_alloc&) {
    fail<MemoryError>("grad", "out of memory (std::bad_alloc) during the backward pass");
  }
}

void Tape::check_versions(std::string_view op, std::span<const Var> outputs) const {
  std::uint32_t hi = 0;
  for (const Var& o : outputs) hi = std::max(hi, o.id());
  // A read that needs no gradient (a random stream's int64 state) receives none: its
  // change cannot make backward accumulate into a value that moved on.
  std::vector<const SharedRead*> stale;
  for (const auto& r : shared_reads_)
    if (r.node <= hi && nodes_[r.node].requires_grad && r.shared.version() != r.version) stale.push_back(&r);
  if (stale.empty()) return;
  // Only a stale read on the way from the output matters (one read again after a change
  // leaves the old read behind, unused): mark what the output depends on, then check.
  std::vector<std::uint8_t> reached(hi + 1, 0);
  for (const Var& o : outputs) reached[o.id()] = 1;
  for (std::uint32_t i = hi + 1; i-- > 0;)
    if (reached[i])
      for (std::uint32_t in : nodes_[i].inputs) reached[in] = 1;
  for (const SharedRead* r : stale)
    if (reached[r->node])
      fail<VersionError>(op, "shared variable '", r->shared.name(), "' of shape ", to_string(r->shared.shape()),
                         " was changed (version ", r->version, " -> ", r->shared.version(),
                         ") after this tape read it; its backward pass would use a stale value");
}

// Walks down from the output as the pass would (through op nodes above any cut, to inputs
// that need a gradient) and throws at the first node an earlier backward consumed. Only
// nodes at or above the lowest consumed one can be: below it nothing is walked.
void Tape::check_not_consumed(const Var& output) const {
  const std::uint32_t hi = output.id(), lo = lowest_consumed_;
  if (lo > hi) return;
  std::vector<std::uint8_t> reached(hi - lo + 1, 0);
  reached[hi - lo] = 1;
  for (std::uint32_t i = hi + 1; i-- > lo;) {
    const detail::Node& n = nodes_[i];
    if (!reached[i - lo] || n.cut) continue;
    if (!n.op) {  // a leaf, or another output of an op whose rule comes with its node
      if (n.output > 0 && n.inputs[0] >= lo) reached[n.inputs[0] - lo] = 1;
      continue;
    }
    if (n.consumed)
      fail<GradientError>("backward", "the output (node ", hi, " of this tape) depends on op '", n.op.name(), "' (node ", i,
                          "), which an earlier backward already ran through and delivered the gradients of; "
                          "a second backward through it would add them again. To backward through a graph more "
                          "than once, pass {.retain_graph = true} to every backward but the last; otherwise record "
                          "the computation again (a fresh tape per step)");
    for (std::uint32_t in : n.inputs)
      if (in >= lo && nodes_[in].requires_grad) reached[in - lo] = 1;
  }
}

// ---- free functions -------------------------------------------------------------------

void backward(const Var& loss, BackwardOptions options) { loss.tape().backward(loss, options); }

std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                      std::span<const Tensor> grad_outputs, GradOptions options) {
  if (outputs.empty()) fail<ValueError>("grad", "no outputs given");
  return outputs[0].tape().grad(outputs, inputs, grad_outputs, options);
}

Var grad(const Var& output, const Var& input, GradOptions options) {
  return grad(std::span<const Var>(&output, 1), std::span<const Var>(&input, 1), {}, options)[0];
}

}  // namespace recur
