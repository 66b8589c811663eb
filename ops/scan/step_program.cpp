// A recorded step read back as a program, two programs compared, and a program replayed
// (step_program_detail.hpp).
#include <recur/ops/scan/step_program_detail.hpp>

#include <algorithm>
#include <cstring>
#include <unordered_map>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/recording_scope.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/scan/step_rewrite_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::scan_engine::detail {
namespace {

using Kind = ValueRef::Kind;

class ProgramReader {
 public:
  ProgramReader(const Tape& tape, const RecordedStep& step) : tape_(tape), s_(step) {
    for (const auto& [shared, value] : s_.result->updates) updated_.push_back(shared);
    for (const auto& [shared, value] : s_.implicit_updates) updated_.push_back(shared);
  }

  std::pair<std::optional<StepProgram>, Refusal> operator()() {
    for (const Var& a : s_.args) p_.arg_nodes.push_back(a.id());
    for (std::uint32_t id = s_.begin; id < s_.end; ++id)
      if (!read_node(id)) return {std::nullopt, refusal_};
    for (const Var& v : s_.result->outputs) {
      const auto r = ref_of(v.id());
      if (!r) return {std::nullopt, refusal_};
      p_.outputs.push_back(*r);
    }
    auto read_updates = [&](auto& into, const auto& updates) {
      for (const auto& [shared, value] : updates) {
        const auto r = ref_of(value.id());
        if (!r) return false;
        into.emplace_back(shared_index(shared), *r);
      }
      return true;
    };
    if (!read_updates(p_.updates, s_.result->updates) || !read_updates(p_.implicit_updates, s_.implicit_updates))
      return {std::nullopt, refusal_};
    return {std::optional<StepProgram>(std::move(p_)), Refusal{}};
  }

 private:
  bool refuse(bool inherent, std::string reason) {
    refusal_ = {inherent, std::move(reason)};
    return false;
  }

  std::uint32_t shared_index(const Shared& shared) {
    const auto it = std::find(p_.shareds.begin(), p_.shareds.end(), shared);
    if (it != p_.shareds.end()) return static_cast<std::uint32_t>(it - p_.shareds.begin());
    p_.shareds.push_back(shared);
    return static_cast<std::uint32_t>(p_.shareds.size() - 1);
  }
  bool updated_in_step(const Shared& shared) const {
    return std::find(updated_.begin(), updated_.end(), shared) != updated_.end();
  }
  bool updated_before(const Shared& shared) const {
    return std::any_of(s_.previous_updates.begin(), s_.previous_updates.end(),
                       [&](const auto& u) { return u.first == shared; });
  }

  // Where the value of node `id` comes from, as the step sees it.
  std::optional<ValueRef> ref_of(std::uint32_t id) {
    if (id >= s_.begin && id < s_.end) return local_.at(id);
    for (std::size_t i = 0; i < s_.args.size(); ++i)
      if (s_.args[i].id() == id) return ValueRef{Kind::arg, static_cast<std::uint32_t>(i)};
    for (const auto& [shared, value] : s_.previous_updates)  // a read that sees an earlier step's update
      if (value.id() == id) return ValueRef{Kind::shared, shared_index(shared)};
    if (id < s_.loop_begin) {
      // A read of a Shared the step updates reads the update from the next step on. Once an
      // earlier step updated it, the old read is a Var the step function holds: outer (so
      // the two steps' programs differ).
      if (const Shared* read = TapeAccess::shared_read_by(tape_, id); read && updated_in_step(*read) &&
                                                                       !updated_before(*read))
        return ValueRef{Kind::shared, shared_index(*read)};
      return ValueRef{Kind::outer, id};
    }
    refuse(true, "the step uses a value an earlier step made that is not one of its arguments");
    return std::nullopt;
  }

  bool read_node(std::uint32_t id) {
    const recur::detail::Node& n = TapeAccess::node(tape_, id);
    if (n.output > 0) {  // another output of a multi-output op of this step
      ValueRef main = local_.at(n.inputs[0]);
      StepOp& op = p_.ops[main.index];
      op.outputs = std::max<std::uint8_t>(op.outputs, n.output + 1);
      main.output = n.output;
      local_[id] = main;
      return true;
    }
    if (!n.op) {
      if (const Shared* read = TapeAccess::shared_read_by(tape_, id)) {
        local_[id] = {Kind::shared, shared_index(*read)};
      } else if (n.leaf_grad >= 0) {
        return refuse(false, "the step makes a variable (Tape::variable)");
      } else {
        local_[id] = {Kind::literal, static_cast<std::uint32_t>(p_.literals.size())};
        p_.literals.push_back(n.value);
      }
      return true;
    }
    const std::string name(n.op.name());
    if (n.cut) return refuse(false, "the step holds a loop with truncated gradients (" + name + ")");
    if (!n.op.copyable()) return refuse(false, "op " + name + " cannot be copied");
    if (!n.op.attributes()) return refuse(false, "op " + name + " does not describe its parameters");
    StepOp op{n.op.clone(), {}, 1, n.value.shape()};
    bool input_wants_gradient = false;
    for (std::uint32_t in : n.inputs) {
      const auto r = ref_of(in);
      if (!r) return false;
      op.inputs.push_back(*r);
      input_wants_gradient = input_wants_gradient || TapeAccess::requires_grad(tape_, in);
    }
    op.takes_gradient = n.requires_grad || !input_wants_gradient;
    local_[id] = {Kind::local, static_cast<std::uint32_t>(p_.ops.size())};
    p_.ops.push_back(std::move(op));
    return true;
  }

  const Tape& tape_;
  const RecordedStep& s_;
  StepProgram p_;
  std::unordered_map<std::uint32_t, ValueRef> local_;
  std::vector<Shared> updated_;
  Refusal refusal_;
};

bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.dtype() != b.dtype() || a.shape() != b.shape()) return false;
  return std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0;  // tensors are contiguous
}

// x (of program a) and y (of the next step's program) name the same value.
bool same_ref(const StepProgram& a, const ValueRef& x, const ValueRef& y) {
  if (x.kind == Kind::arg && y.kind == Kind::arg && y.index < a.arg_nodes.size())
    return a.arg_nodes[x.index] == a.arg_nodes[y.index];
  return x == y;
}
bool same_refs(const StepProgram& a, std::span<const ValueRef> x, std::span<const ValueRef> y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (!same_ref(a, x[i], y[i])) return false;
  return true;
}
bool same_updates(const StepProgram& a, std::span<const std::pair<std::size_t, ValueRef>> x,
                  std::span<const std::pair<std::size_t, ValueRef>> y) {
  if (x.size() != y.size()) return false;
  for (std::size_t i = 0; i < x.size(); ++i)
    if (x[i].first != y[i].first || !same_ref(a, x[i].second, y[i].second)) return false;
  return true;
}

std::string where(std::size_t k, const StepProgram& p) {
  return "op " + std::to_string(k) + " (" + std::string(p.ops[k].op.name()) + ")";
}

}  // namespace

std::pair<std::optional<StepProgram>, Refusal> read_program(const Tape& tape, const RecordedStep& step) {
  return ProgramReader(tape, step)();
}

std::optional<std::string> difference(const StepProgram& a, const StepProgram& b) {
  if (a.ops.size() != b.ops.size())
    return "the steps record " + std::to_string(a.ops.size()) + " and " + std::to_string(b.ops.size()) + " ops";
  for (std::size_t k = 0; k < a.ops.size(); ++k) {
    const StepOp &x = a.ops[k], &y = b.ops[k];
    if (x.op.name() != y.op.name()) return where(k, a) + " is " + std::string(y.op.name()) + " at the next step";
    if (*x.op.attributes() != *y.op.attributes()) return where(k, a) + " has other parameters at the next step";
    if (!same_refs(a, x.inputs, y.inputs) || x.outputs != y.outputs)
      return where(k, a) + " reads other values at the next step";
  }
  if (a.literals.size() != b.literals.size()) return std::string("the steps make different constants");
  for (std::size_t i = 0; i < a.literals.size(); ++i)
    if (!same_bits(a.literals[i], b.literals[i]))
      return "constant " + std::to_string(i) + " made inside the step changes between steps (a value read on the host?)";
  if (a.shareds != b.shareds) return std::string("the steps read different shared variables");
  if (!same_refs(a, a.outputs, b.outputs)) return std::string("the steps return their outputs from different ops");
  if (!same_updates(a, a.updates, b.updates) || !same_updates(a, a.implicit_updates, b.implicit_updates))
    return std::string("the steps update shared variables differently");
  return std::nullopt;
}

std::vector<std::uint8_t> arguments_read(const StepProgram& program, std::size_t n_args) {
  std::vector<std::uint8_t> read(n_args, 0);
  auto mark = [&](const ValueRef& r) {
    if (r.kind == Kind::arg && r.index < n_args) read[r.index] = 1;
  };
  for (const StepOp& op : program.ops)
    for (const ValueRef& r : op.inputs) mark(r);
  for_each_result(program, mark);
  return read;
}

namespace {
// A copy of `op` run again on tape nodes `ids` and recorded: with a gradient when an input
// wants one, gradients are on and the op takes one. `more` (if given) gets its other outputs.
Var record_copy(Tape& tape, const recur::detail::OpBox& op, std::span<const std::uint32_t> ids, bool takes_gradient,
                std::vector<Tensor>* more = nullptr) {
  boost::container::small_vector<const Tensor*, 4> values;
  bool needs = false;
  for (const std::uint32_t id : ids) {
    values.push_back(&TapeAccess::node_value(tape, id));
    needs = needs || TapeAccess::requires_grad(tape, id);
  }
  needs = needs && grad_enabled() && takes_gradient;
  recur::detail::OpBox box = op.clone();
  Tensor out = box.replay(InputList<Tensor>(values.data(), values.size()));
  if (more) *more = box.more_outputs();
  return TapeAccess::push(tape, std::move(out), ids, needs ? std::move(box) : recur::detail::OpBox(), needs);
}
}  // namespace

Var record_program_op(Tape& tape, const recur::detail::OpBox& op, const std::vector<Var>& inputs,
                      bool takes_gradient) {
  boost::container::small_vector<std::uint32_t, 4> ids;
  for (const Var& v : inputs) ids.push_back(v.id());
  return record_copy(tape, op, std::span<const std::uint32_t>(ids.data(), ids.size()), takes_gradient);
}

std::vector<Var> record_program_op_outputs(Tape& tape, const recur::detail::OpBox& op, const std::vector<Var>& inputs,
                                           bool takes_gradient) {
  boost::container::small_vector<std::uint32_t, 4> ids;
  for (const Var& v : inputs) ids.push_back(v.id());
  std::vector<Tensor> more;
  const std::span<const std::uint32_t> input_ids(ids.data(), ids.size());
  std::vector<Var> out{record_copy(tape, op, input_ids, takes_gradient, &more)};
  for (std::size_t m = 0; m < more.size(); ++m)
    out.push_back(TapeAccess::push_output(tape, std::move(more[m]), out[0].id(), m + 1));
  return out;
}

StepReplay::StepReplay(Tape& tape, const StepProgram& program, const PushedBlocks& blocks)
    : tape_(tape), program_(program), blocks_(blocks) {
  for (const Tensor& t : program.literals) literals_.push_back(tape.constant(t));
  std::size_t next = 0;
  for (const StepOp& op : program.ops) {
    first_value_.push_back(next);
    next += op.outputs;
  }
  // Who reads what: an op's first output when the op has no others, and rows.
  auto readers_of = [&](const ValueRef& r) -> std::vector<std::pair<std::uint32_t, std::uint32_t>>& {
    for (auto& [value, readers] : readers_)
      if (value == r) return readers;
    return readers_.emplace_back(r, std::vector<std::pair<std::uint32_t, std::uint32_t>>{}).second;
  };
  for (std::uint32_t k = 0; k < program.ops.size(); ++k)
    if (program.ops[k].outputs == 1) readers_of({ValueRef::Kind::local, k, 0});
  for (std::uint32_t k = 0; k < program.ops.size(); ++k)
    for (std::uint32_t s = 0; s < program.ops[k].inputs.size(); ++s) {
      const ValueRef& in = program.ops[k].inputs[s];
      if (in.kind == ValueRef::Kind::row || (in.kind == ValueRef::Kind::local && program.ops[in.index].outputs == 1))
        readers_of(in).emplace_back(k, s);
    }
  for_each_result(program, [&](const ValueRef& r) { returned_.push_back(r); });
}

bool StepReplay::read_by_backward(std::size_t value, std::uint32_t id) const {
  const recur::detail::OpBox& op = TapeAccess::node(tape_, id).op;
  if (!op || op.backward_reads(recur::detail::kBackwardOutput)) return true;  // no op: nothing to replay it
  for (const auto& [k, s] : readers_[value].second) {
    const recur::detail::OpBox& reader = TapeAccess::node(tape_, values_[first_value_[k]].id()).op;
    if (!reader || reader.backward_reads(s)) return true;  // no op here: it may have one at a later step
  }
  return false;
}

void StepReplay::drop_unread() {
  // This step's node of each value (0: none, a row the step did not read).
  auto node_of = [&](const ValueRef& value) -> std::uint32_t {
    if (value.kind == ValueRef::Kind::local) return values_[first_value_[value.index]].id();
    for (const auto& [row_of, row] : rows_)
      if (row_of == value.index) return row.id();
    return 0;
  };
  if (!droppable_) {  // decided at the first step: every step records the same ops
    droppable_.emplace();
    for (std::size_t k = 0; k < readers_.size(); ++k) {
      const ValueRef& value = readers_[k].first;
      if (std::find(returned_.begin(), returned_.end(), value) != returned_.end()) continue;
      if (const std::uint32_t id = node_of(value); id != 0 && !read_by_backward(k, id)) droppable_->push_back(k);
    }
  }
  for (std::size_t k : *droppable_)
    if (const std::uint32_t id = node_of(readers_[k].first); id != 0) TapeAccess::drop_unread_value(tape_, id);
}

std::uint32_t StepReplay::block_node(std::uint32_t first) const {
  const auto it = block_nodes_.find(first);
  return it == block_nodes_.end() ? first : it->second;
}

void StepReplay::begin_block(std::int64_t t0, std::int64_t t1, const std::vector<ArgRole>& args) {
  block_begin_ = t0;
  block_nodes_.clear();
  for (const auto& [arg, first] : blocks_.args) block_nodes_[first] = args[arg].every_step(t0, t1).id();
  for (const PushedBlocks::Op& op : blocks_.ops) {
    std::vector<Var> inputs;
    for (std::uint32_t in : op.inputs) inputs.push_back(TapeAccess::handle(tape_, block_node(in)));
    Var v;
    if (op.op) {
      v = record_program_op(tape_, op.op, inputs, op.takes_gradient);
    } else {  // the first size counts the block's steps
      Shape shape = op.shape;
      shape[0] *= t1 - t0;
      v = reshape(inputs[0], shape);
    }
    block_nodes_[op.node] = v.id();
  }
}

void StepReplay::drop_unread_block() {
  if (blocks_.ops.empty()) return;
  std::vector<std::uint32_t> ids;
  for (const PushedBlocks::Op& op : blocks_.ops) ids.push_back(block_node(op.node));
  const auto [lo, hi] = std::minmax_element(ids.begin(), ids.end());
  const std::uint32_t begin = *lo;
  const std::vector<std::uint8_t> read = recur::scan_engine::detail::read_by_backward(tape_, begin, *hi + 1);
  for (std::uint32_t id : ids)
    if (!read[id - begin]) TapeAccess::drop_unread_value(tape_, id);
}

void StepReplay::drop_unread_before(std::uint32_t begin, std::uint32_t end) {
  const std::vector<std::uint8_t> read = recur::scan_engine::detail::read_by_backward(tape_, begin, end);
  for (std::uint32_t id = begin; id < end; ++id)
    if (!read[id - begin] &&
        std::find(returned_.begin(), returned_.end(), ValueRef{ValueRef::Kind::outer, id, 0}) == returned_.end())
      TapeAccess::drop_unread_value(tape_, id);
}

std::vector<std::uint8_t> read_by_backward(const Tape& tape, std::uint32_t begin, std::uint32_t end) {
  std::vector<std::uint8_t> read(end - begin, 0);
  for (std::uint32_t id = begin; id < end; ++id) {
    const recur::detail::OpBox& op = TapeAccess::node(tape, id).op;
    read[id - begin] = !op || op.backward_reads(recur::detail::kBackwardOutput);
  }
  for (std::uint32_t j = begin + 1; j < tape.size(); ++j) {
    const recur::detail::Node& n = TapeAccess::node(tape, j);
    if (!n.op) continue;
    for (std::size_t s = 0; s < n.inputs.size(); ++s)
      if (n.inputs[s] >= begin && n.inputs[s] < end && n.op.backward_reads(s)) read[n.inputs[s] - begin] = 1;
  }
  return read;
}

Var StepReplay::resolve(const ValueRef& r, std::span<const Var> args, std::int64_t t) {
  switch (r.kind) {
    case Kind::row: {
      for (const auto& [node, row] : rows_)
        if (node == r.index) return row;
      rows_.emplace_back(r.index, index(TapeAccess::handle(tape_, block_node(r.index)), 0, t - block_begin_));
      return rows_.back().second;
    }
    case Kind::arg: return args[r.index];
    case Kind::local: return values_[first_value_[r.index] + r.output];
    case Kind::outer: return TapeAccess::handle(tape_, r.index);
    case Kind::literal: return literals_[r.index];
    default: {
      Var& read = shared_reads_[r.index];
      if (!read.defined()) read = tape_.read(program_.shareds[r.index]);
      return read;
    }
  }
}

StepResult StepReplay::run(std::span<const Var> args, std::int64_t t, RecordingScope& scope) {
  values_.clear();
  rows_.clear();
  shared_reads_.assign(program_.shareds.size(), Var());
  boost::container::small_vector<std::uint32_t, 4> ids;
  std::vector<Tensor> more;
  for (const StepOp& op : program_.ops) {
    ids.clear();
    for (const ValueRef& r : op.inputs) ids.push_back(resolve(r, args, t).id());
    const Var main = record_copy(tape_, op.op, std::span<const std::uint32_t>(ids.data(), ids.size()),
                                 op.takes_gradient, op.outputs > 1 ? &more : nullptr);
    values_.push_back(main);
    for (std::size_t m = 0; m + 1 < op.outputs; ++m)
      values_.push_back(TapeAccess::push_output(tape_, std::move(more[m]), main.id(), m + 1));
  }
  StepResult r;
  r.outputs.reserve(program_.outputs.size());
  for (const ValueRef& o : program_.outputs) r.outputs.push_back(resolve(o, args, t));
  for (const auto& [shared, value] : program_.updates) r.updates.set(program_.shareds[shared], resolve(value, args, t));
  for (const auto& [shared, value] : program_.implicit_updates)
    scope.take_update(program_.shareds[shared], resolve(value, args, t));
  return r;
}

}  // namespace recur::scan_engine::detail
