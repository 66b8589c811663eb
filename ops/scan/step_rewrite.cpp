// A captured step rewritten before the loop (step_rewrite_detail.hpp).
#include <recur/ops/scan/step_rewrite_detail.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>

#include <recur/autodiff/tape_access.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/indexing_detail.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/weight_grad_rows_detail.hpp>
#include <recur/ops/shape.hpp>

namespace recur::scan_engine::detail {
namespace {

using Kind = ValueRef::Kind;
enum class Dep : std::uint8_t { invariant, sequence, varying };  // what a value changes with

// Rows kept for one batched weight gradient: a few hundred (whole steps).
constexpr std::int64_t kWeightGradRows = 512;

bool is_plain_matmul(const StepOp& op) {
  if (op.op.name() != "matmul" || op.shape.size() != 2) return false;
  const OpAttributes attributes = *op.op.attributes();
  return !attributes.get<bool>("matmul", "transpose_a");
}
bool transposed_b(const StepOp& op) { return op.op.attributes()->get<bool>("matmul", "transpose_b"); }

class Rewriter {
 public:
  Rewriter(Tape& tape, const StepProgram& in, const RewriteContext& cx, RewriteCounts& counts, PushedBlocks& blocks)
      : tape_(tape), in_(in), cx_(cx), counts_(counts), blocks_(blocks) {
    blocks_ = PushedBlocks{};
    first_block_ = cx.block_steps > 0 ? std::min(cx.block_steps, cx.steps) : cx.steps;
    if (first_block_ < cx.steps) blocks_.steps = first_block_;
    out_.shareds = in.shareds;
    out_.arg_nodes = in.arg_nodes;
    for (const Tensor& t : in.literals) literal_nodes_.push_back(tape.constant(t).id());
    std::size_t next = 0;
    for (const StepOp& op : in.ops) {
      first_.push_back(next);
      next += op.outputs;
    }
    mapped_.resize(next);
    dep_.resize(next);
    for (const auto& [shared, value] : in.updates) updated_.push_back(shared);
    for (const auto& [shared, value] : in.implicit_updates) updated_.push_back(shared);
  }

  StepProgram operator()() {
    for (std::size_t k = 0; k < in_.ops.size(); ++k) {  // what each value changes with
      const StepOp& op = in_.ops[k];
      Dep d = op.outputs > 1 ? Dep::varying : Dep::invariant;  // several outputs stay in the step
      for (const ValueRef& r : op.inputs) d = std::max(d, dep_of(r));
      for (std::uint8_t o = 0; o < op.outputs; ++o) dep_[first_[k] + o] = d;
    }
    const std::vector<std::vector<std::size_t>> groups =
        rewrite_switches().merge_products ? product_groups() : std::vector<std::vector<std::size_t>>{};
    if (rewrite_switches().fuse_elementwise) find_fused_in_step();
    for (std::size_t k = 0; k < in_.ops.size(); ++k) {
      if (merged_into_.contains(k)) continue;  // an earlier op of its group made it
      if (const auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.front() == k; });
          g != groups.end()) {
        merge(*g);
        continue;
      }
      place(k);
    }
    for (const ValueRef& r : in_.outputs) out_.outputs.push_back(map(r));
    for (const auto& [shared, value] : in_.updates) out_.updates.emplace_back(shared, map(value));
    for (const auto& [shared, value] : in_.implicit_updates) out_.implicit_updates.emplace_back(shared, map(value));
    if (rewrite_switches().fuse_elementwise) {
      push_out_unfused();
      counts_.fused_chains = fuse_elementwise(out_, [this](const ValueRef& r) { return shape_in(out_, r); });
    }
    return std::move(out_);
  }

 private:
  // ---- values ---------------------------------------------------------------------------
  std::size_t flat(const ValueRef& local) const { return first_[local.index] + local.output; }

  Dep dep_of(const ValueRef& r) const {
    switch (r.kind) {
      case Kind::arg:
        return cx_.args[r.index].kind == ArgRole::Kind::invariant ? Dep::invariant
               : cx_.args[r.index].kind == ArgRole::Kind::sequence ? Dep::sequence
                                                                    : Dep::varying;
      case Kind::local: return dep_[flat(r)];
      case Kind::shared:
        return std::find(updated_.begin(), updated_.end(), r.index) != updated_.end() ? Dep::varying : Dep::invariant;
      default: return Dep::invariant;  // outer nodes and constants
    }
  }
  // The input program's ref as the output program reads it.
  ValueRef map(const ValueRef& r) const {
    if (r.kind == Kind::local) return mapped_[flat(r)];
    if (r.kind == Kind::literal) return {Kind::outer, literal_nodes_[r.index]};
    return r;
  }
  // The shape of a value at one step: `p`'s op for a local value (the input program's or the
  // output program's), else what the ref names.
  Shape shape_in(const StepProgram& p, const ValueRef& r) const {
    switch (r.kind) {
      case Kind::arg: return cx_.args[r.index].shape;
      case Kind::local: return r.output == 0 ? p.ops[r.index].shape : Shape{};
      case Kind::literal: return in_.literals[r.index].shape();
      case Kind::shared: return in_.shareds[r.index].shape();
      case Kind::row: {  // the row of one step
        const Shape& s = TapeAccess::node_value(tape_, r.index).shape();
        return Shape(s.begin() + 1, s.end());
      }
      default: return TapeAccess::node_value(tape_, r.index).shape();
    }
  }
  Shape step_shape(const ValueRef& r) const { return shape_in(in_, r); }
  // A value that does not change, as a Var (mapped ref of kind outer).
  Var invariant_var(const ValueRef& mapped) {
    if (mapped.kind == Kind::arg) return TapeAccess::handle(tape_, in_.arg_nodes[mapped.index]);
    if (mapped.kind == Kind::shared) return tape_.read(in_.shareds[mapped.index]);
    return TapeAccess::handle(tape_, mapped.index);
  }
  // A value of the sequences, every step's at once; undefined when there is none.
  Var every_step_var(const ValueRef& mapped) {
    if (mapped.kind == Kind::row) return TapeAccess::handle(tape_, mapped.index);
    if (mapped.kind == Kind::arg && cx_.args[mapped.index].every_step) {
      auto& cached = every_step_args_[mapped.index];
      if (!cached.defined()) {
        cached = cx_.args[mapped.index].every_step(0, first_block_);
        blocks_.args.emplace_back(mapped.index, cached.id());
      }
      return cached;
    }
    return Var();
  }

  // ---- placing each op -----------------------------------------------------------------
  void place(std::size_t k) {
    const ValueRef at = fused_in_step_.contains(k) ? keep(in_.ops[k]) : place_op(in_.ops[k], dep_[first_[k]]);
    for (std::uint8_t o = 0; o < in_.ops[k].outputs; ++o) mapped_[first_[k] + o] = {at.kind, at.index, o};
  }

  // Where `op` (of the input program, or a merged product made from its ops) goes: before the
  // loop when nothing it reads changes (outer), over every step at once when only the
  // sequences change (row), else into the step (local). Its first output's ref.
  ValueRef place_op(const StepOp& op, Dep d) {
    if (d == Dep::invariant) {
      std::vector<Var> inputs;
      for (const ValueRef& r : op.inputs) inputs.push_back(invariant_var(map(r)));
      ++counts_.hoisted;
      return {Kind::outer, record_program_op(tape_, op.op, inputs, op.takes_gradient).id()};
    }
    if (d == Dep::sequence && cx_.push_out)
      if (const Var v = over_every_step(op); v.defined()) {
        ++counts_.pushed_out;
        return {Kind::row, v.id()};
      }
    return keep(op);
  }

  // op at every step at once, when it runs so (elementwise ops, products with a weight).
  Var over_every_step(const StepOp& op) {
    const std::size_t rank = op.shape.size();
    std::vector<Var> inputs;
    for (const ValueRef& r : op.inputs) {
      const ValueRef m = map(r);
      if (dep_of(r) == Dep::sequence) {
        // The new time axis goes first: only where it lines up with the output's.
        if (step_shape(r).size() != rank) return Var();
        inputs.push_back(every_step_var(m));
        if (!inputs.back().defined()) return Var();
      } else {
        if (step_shape(r).size() > rank) return Var();
        inputs.push_back(invariant_var(m));
      }
    }
    if (op.op.elementwise()) return pushed(op.op, inputs, op.takes_gradient);
    if (is_plain_matmul(op) && dep_of(op.inputs[1]) == Dep::invariant && inputs[1].rank() == 2) {
      // [T, B, K] as [T B, K]: one product for every step's rows.
      const Shape& x = inputs[0].shape();
      const Var rows = pushed_reshape(inputs[0], {x[1], x[2]});
      const Var product = pushed(op.op, {rows, inputs[1]}, op.takes_gradient);
      return pushed_reshape(product, {1, x[1], product.size(1)});
    }
    return Var();
  }
  // Pushed-out work, recorded over the first block and noted for the later blocks.
  Var pushed(const recur::detail::OpBox& op, const std::vector<Var>& inputs, bool takes_gradient) {
    const Var v = record_program_op(tape_, op, inputs, takes_gradient);
    note(op.clone(), {}, inputs, takes_gradient, v);
    return v;
  }
  // A reshape whose first size is `per_step` times the block's steps.
  Var pushed_reshape(const Var& x, Shape per_step) {
    Shape shape = per_step;
    shape[0] *= first_block_;
    const Var v = reshape(x, shape);
    note(recur::detail::OpBox(), std::move(per_step), {x}, true, v);
    return v;
  }
  void note(recur::detail::OpBox op, Shape shape, const std::vector<Var>& inputs, bool takes_gradient, const Var& v) {
    if (blocks_.steps == 0) return;  // one block: nothing to record again
    std::vector<std::uint32_t> ids;
    for (const Var& in : inputs) ids.push_back(in.id());
    blocks_.ops.push_back({std::move(op), std::move(shape), std::move(ids), takes_gradient, v.id()});
  }

  // `product` (a plain matmul of a changing value and a weight that does not change, as the
  // step records it) takes its weight gradient over many steps' rows, when the loop records
  // gradients, the weight wants one and the step has rows.
  void batch_weight_grad(StepOp& product) {
    const Var w = invariant_var(product.inputs[1]);
    const std::int64_t rows_per_step = product.shape[0];
    if (!cx_.gradients || !product.takes_gradient || w.rank() != 2 || w.numel() == 0 ||
        !TapeAccess::requires_grad(tape_, w.id()) || rows_per_step == 0)
      return;
    const bool tb = transposed_b(product);
    // No more steps' rows than the loop has (a short loop's buffers stay small).
    const std::int64_t steps =
        std::clamp<std::int64_t>(kWeightGradRows / rows_per_step, 1, std::max<std::int64_t>(1, cx_.steps));
    auto rows = std::make_shared<WeightGradRows>(steps * rows_per_step, tb);
    product.inputs[1] = {Kind::outer, weight_grad_sum(w, rows).id()};
    product.op = step_matmul_op(tb, std::move(rows), cx_.steps);
    ++counts_.batched_weight_grads;
  }

  // op stays in the step; a product of a changing value with a weight batches its weight
  // gradient when the loop records gradients.
  ValueRef keep(const StepOp& op) {
    StepOp copy{op.op.clone(), {}, op.outputs, op.shape, op.takes_gradient};
    for (const ValueRef& r : op.inputs) copy.inputs.push_back(map(r));
    if (is_plain_matmul(op) && dep_of(op.inputs[1]) == Dep::invariant && step_shape(op.inputs[0]).size() == 2)
      batch_weight_grad(copy);
    out_.ops.push_back(std::move(copy));
    return {Kind::local, static_cast<std::uint32_t>(out_.ops.size() - 1)};
  }

  // ---- elementwise work on the sequences that a chain takes in ----------------------------
  // An elementwise op on the sequences alone (x W + b) runs over every step at once, unless
  // all that reads it stays in the step and fuses with it: the step's elementwise ops, or
  // slices of it that only they read (split(x W + b), the gates of a GRU). In the step's chain
  // it costs one more instruction on values in cache; pushed out, a pass over every step's
  // rows, another for its gradient's sum, and a tape node per step for its row.
  void find_fused_in_step() {
    std::vector<std::vector<std::size_t>> readers(in_.ops.size());
    for (std::size_t j = 0; j < in_.ops.size(); ++j)
      for (const ValueRef& r : in_.ops[j].inputs)
        if (r.kind == Kind::local) readers[r.index].push_back(j);
    auto fuses_in_step = [&](std::size_t j) {
      return in_.ops[j].outputs == 1 && dep_[first_[j]] == Dep::varying && chain_code(in_.ops[j].op.name());
    };
    for (std::size_t k = 0; k < in_.ops.size(); ++k) {
      const StepOp& op = in_.ops[k];
      if (op.outputs != 1 || dep_[first_[k]] != Dep::sequence || !op.op.elementwise() ||
          !chain_code(op.op.name()) || readers[k].empty() || op_is_result(in_, k))
        continue;
      const bool taken_in = std::all_of(readers[k].begin(), readers[k].end(), [&](std::size_t j) {
        if (fuses_in_step(j)) return true;
        return in_.ops[j].op.name() == "slice" && !readers[j].empty() && !op_is_result(in_, j) &&
               std::all_of(readers[j].begin(), readers[j].end(), fuses_in_step);
      });
      if (taken_in) fused_in_step_.insert(k);
    }
  }

  // The ops find_fused_in_step kept in the step that no chain takes in after all (a chain
  // too short to fuse): pushed out over every step, as place_op would have.
  void push_out_unfused() {
    if (fused_in_step_.empty()) return;
    const std::vector<std::uint8_t> fused = ops_fused(out_, [this](const ValueRef& r) { return shape_in(out_, r); });
    std::vector<std::size_t> kept;  // in descending order of their place in out_
    for (std::size_t k : fused_in_step_) kept.push_back(k);
    std::sort(kept.begin(), kept.end(), [&](std::size_t a, std::size_t b) { return a > b; });
    for (std::size_t k : kept) {
      const ValueRef at = mapped_[first_[k]];
      if (fused[at.index]) continue;
      const Var v = over_every_step(in_.ops[k]);
      if (!v.defined()) continue;
      ++counts_.pushed_out;
      replace_local(at.index, {Kind::row, v.id()});
      mapped_[first_[k]] = {Kind::row, v.id()};
    }
  }
  // Removes out_'s op `index` (one output), its readers reading `with` instead.
  void replace_local(std::uint32_t index, const ValueRef& with) {
    auto fix = [&](ValueRef& r) {
      if (r.kind != Kind::local) return;
      if (r.index == index) r = with;
      else if (r.index > index) --r.index;
    };
    out_.ops.erase(out_.ops.begin() + index);
    for (StepOp& op : out_.ops)
      for (ValueRef& r : op.inputs) fix(r);
    for (ValueRef& r : out_.outputs) fix(r);
    for (auto& u : out_.updates) fix(u.second);
    for (auto& u : out_.implicit_updates) fix(u.second);
    for (ValueRef& r : mapped_) fix(r);
  }

  // ---- merging products ----------------------------------------------------------------
  // Groups (two or more, in program order) of plain products of one value with weights that
  // do not change, alike in transposition and inner size: each becomes one product.
  std::vector<std::vector<std::size_t>> product_groups() {
    std::vector<std::vector<std::size_t>> groups;
    std::vector<bool> taken(in_.ops.size(), false);
    for (std::size_t k = 0; k < in_.ops.size(); ++k) {
      if (taken[k] || !mergeable(k)) continue;
      std::vector<std::size_t> group{k};
      for (std::size_t j = k + 1; j < in_.ops.size(); ++j)
        if (!taken[j] && mergeable(j) && in_.ops[j].inputs[0] == in_.ops[k].inputs[0] &&
            transposed_b(in_.ops[j]) == transposed_b(in_.ops[k]) &&
            step_shape(in_.ops[j].inputs[1])[transposed_b(in_.ops[k]) ? 1 : 0] ==
                step_shape(in_.ops[k].inputs[1])[transposed_b(in_.ops[k]) ? 1 : 0] &&
            weight_ready_at(j, k)) {
          group.push_back(j);
          taken[j] = true;
        }
      if (group.size() > 1) {
        for (std::size_t j : group) merged_into_.insert(j);
        merged_into_.erase(group.front());
        groups.push_back(std::move(group));
      }
    }
    return groups;
  }
  bool mergeable(std::size_t k) const {
    const StepOp& op = in_.ops[k];
    return is_plain_matmul(op) && op.takes_gradient && dep_of(op.inputs[1]) == Dep::invariant &&
           step_shape(op.inputs[1]).size() == 2;
  }
  // Op j's weight exists where op k runs (j's value is k's): made by an op before k, if any.
  bool weight_ready_at(std::size_t j, std::size_t k) const {
    const ValueRef& w = in_.ops[j].inputs[1];
    return w.kind != Kind::local || w.index < k;
  }

  void merge(const std::vector<std::size_t>& group) {
    const StepOp& first = in_.ops[group.front()];
    const bool tb = transposed_b(first);
    std::vector<Var> weights;
    std::vector<std::int64_t> widths;
    for (std::size_t k : group) {
      weights.push_back(invariant_var(map(in_.ops[k].inputs[1])));
      widths.push_back(in_.ops[k].shape[1]);
    }
    const Var joined = concat(std::span<const Var>(weights), tb ? 0 : 1);
    // The merged product, placed as one op of the input program would be.
    const StepOp product{first.op.clone(), {first.inputs[0], {Kind::outer, joined.id()}}, 1,
                         Shape{first.shape[0], joined.size(tb ? 0 : 1)}};
    const Dep d = dep_[first_[group.front()]];
    // Place the product (hoisted, pushed out or kept), then slice each original's columns.
    const ValueRef merged_ref = place_op(product, d);
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < group.size(); ++i) {
      const std::size_t k = group[i];
      StepOp piece{recur::detail::slice_op(1, offset, offset + widths[i]), {merged_ref}, 1, in_.ops[k].shape};
      offset += widths[i];
      if (merged_ref.kind != Kind::outer) {  // each step slices its row of the product
        // (slicing every step's rows at once before the loop would copy them, and scatter
        // their gradients back, four times over)
        mapped_[first_[k]] = {Kind::local, static_cast<std::uint32_t>(out_.ops.size())};
        out_.ops.push_back(std::move(piece));
      } else {  // the product does not change: neither do its slices
        const Var part = slice(TapeAccess::handle(tape_, merged_ref.index), 1, offset - widths[i], offset);
        mapped_[first_[k]] = {Kind::outer, part.id()};
      }
    }
    ++counts_.merged;
  }
  Tape& tape_;
  const StepProgram& in_;
  const RewriteContext& cx_;
  RewriteCounts& counts_;
  PushedBlocks& blocks_;
  std::int64_t first_block_ = 0;  // steps of the first block of pushed-out work
  StepProgram out_;
  std::vector<std::uint32_t> literal_nodes_;
  std::vector<std::size_t> first_;
  std::vector<ValueRef> mapped_;
  std::vector<Dep> dep_;
  std::vector<std::size_t> updated_;
  std::unordered_map<std::size_t, Var> every_step_args_;
  std::unordered_set<std::size_t> merged_into_;
  std::unordered_set<std::size_t> fused_in_step_;  // find_fused_in_step
};

std::atomic<bool> merge_switch{RewriteSwitches{}.merge_products}, fuse_switch{RewriteSwitches{}.fuse_elementwise};
std::atomic<std::int64_t> pushed_rows_switch{RewriteSwitches{}.pushed_rows};

}  // namespace

void set_rewrite_switches(RewriteSwitches s) {
  merge_switch = s.merge_products;
  fuse_switch = s.fuse_elementwise;
  pushed_rows_switch = s.pushed_rows;
}
RewriteSwitches rewrite_switches() { return {merge_switch, fuse_switch, pushed_rows_switch}; }

StepProgram rewrite(Tape& tape, const StepProgram& program, const RewriteContext& context, RewriteCounts* counts,
                    PushedBlocks* blocks) {
  RewriteCounts ignored;
  PushedBlocks unused;
  return Rewriter(tape, program, context, counts ? *counts : ignored, blocks ? *blocks : unused)();
}

}  // namespace recur::scan_engine::detail
