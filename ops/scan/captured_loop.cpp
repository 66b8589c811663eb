// A captured loop recorded as one tape node (captured_loop_detail.hpp).
#include <recur/ops/scan/captured_loop_detail.hpp>
#include <recur/ops/scan/planned_loop_detail.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <string>
#include <utility>

#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/elementwise.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/indexing_detail.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>

namespace recur::scan_engine::detail {
namespace {

using Kind = ValueRef::Kind;

// What the rules of one step's ops read, from the ops themselves (`ops`: the step's copies,
// run: an op that has not run may say it reads every input): a reader's inputs as it says,
// and an op's main output where its rule reads it or it has others.
KeptValues kept_values(const LoopWiring& w, std::span<const recur::detail::OpBox> ops) {
  return kept_values(
      w, [&](std::size_t k, std::size_t s) { return ops[k].backward_reads(s); },
      [&](std::size_t k, std::size_t o) {
        return o == 0 && (w.n_out[k] > 1 || ops[k].backward_reads(recur::detail::kBackwardOutput));
      });
}

struct CapturedLoop {
  static constexpr std::string_view name = "scan_captured_loop";
  std::shared_ptr<const LoopWiring> w;
  std::int64_t steps = 0;
  // What the forward made for backward: every step's copy of each op (ops keep what their
  // rules read) and the values a rule reads, [steps, kept values] (a value's column is
  // kept_at[v]; one no rule reads has -1, and its shape-only stand-in, the same at every
  // step, is in `shapes`). Only kept values take room: a step's share of what backward reads
  // again, cold, is smaller.
  mutable std::vector<recur::detail::OpBox> ops;
  mutable std::vector<Tensor> values;
  mutable std::vector<std::int32_t> kept_at;
  mutable std::size_t n_kept = 0;
  mutable std::vector<Tensor> shapes;
  mutable std::vector<Tensor> more;
  mutable KeptValues kept;  // from the first step's copies of the ops, once they ran
  // Where every op is one a planned loop runs (planned_loop_detail.hpp): that loop, which
  // then holds what backward reads instead of `ops` and `values`.
  mutable std::unique_ptr<PlannedLoop> planned;

  CapturedLoop(std::shared_ptr<const LoopWiring> wiring, std::int64_t n) : w(std::move(wiring)), steps(n) {}
  CapturedLoop(CapturedLoop&&) = default;
  CapturedLoop(const CapturedLoop&) = delete;

  OpAttributes attributes() const {
    std::string names;
    for (const auto& op : w->ops) {
      if (!names.empty()) names.push_back(' ');
      names.append(op.name());
    }
    return {{"steps", steps}, {"ops", names}};
  }
  // The inputs its rules read (a loop's pushed-out products, whose rows only pass gradients
  // on, can be dropped once the loop is recorded); its outputs are the rows its steps read.
  bool backward_reads(std::size_t which) const {
    return which == recur::detail::kBackwardOutput || which >= kept.inputs.size() || kept.inputs[which];
  }
  Grads<Tensor> saved_tensors() const {
    Grads<Tensor> held;
    if (planned) planned->held(held);
    for (const Tensor& v : values)
      if (v.defined()) held.push_back(v);
    for (const recur::detail::OpBox& op : ops)  // what each step's copy keeps (a chain's values)
      for (Tensor& v : op.saved()) held.push_back(std::move(v));
    return held;
  }

  // Step t's input list of op k: `in` the node's inputs, value(v) the step's value v,
  // carried(c) carry c's value made by step t - 1.
  template <class Value, class Carried, class Ptrs>
  void inputs_of(std::size_t k, std::int64_t t, std::span<const Tensor* const> in, Value&& value, Carried&& carried,
                 Ptrs& at) const {
    at.clear();
    for (const LoopWiring::In& s : w->inputs[k]) {
      switch (s.kind) {
        case LoopWiring::In::Kind::value: at.push_back(value(s.index)); break;
        case LoopWiring::In::Kind::external: at.push_back(in[s.index]); break;
        case LoopWiring::In::Kind::carried: at.push_back(t == 0 ? in[s.index] : carried(s.index)); break;
      }
    }
  }

  Tensor forward(std::span<const Tensor> in) const {
    if ((planned = plan_loop(*w, in, steps))) {
      std::vector<Tensor> outs = planned->forward(in);
      kept = planned->kept();
      more.assign(outs.begin() + 1, outs.end());
      return outs[0];
    }
    const LoopWiring& wr = *w;
    const std::size_t n_ops = wr.ops.size(), n = wr.n_values;
    ops.clear();
    ops.reserve(static_cast<std::size_t>(steps) * n_ops);
    values.clear();
    std::vector<Tensor> now(n), prev(wr.carry_result.size());
    std::vector<Tensor> outs(wr.outputs.size());
    boost::container::small_vector<const Tensor*, 8> at;
    std::vector<const Tensor*> in_values;
    for (const Tensor& x : in) in_values.push_back(&x);
    auto value = [&](std::size_t v) { return &now[v]; };
    auto carried = [&](std::size_t c) { return &prev[c]; };
    for (std::int64_t t = 0; t < steps; ++t) {
      for (std::size_t r = 0; r < wr.row_source.size(); ++r) now[wr.n_op_values + r] = in[wr.row_source[r]][t];
      for (std::size_t k = 0; k < n_ops; ++k) {
        inputs_of(k, t, in_values, value, carried, at);
        recur::detail::OpBox op = wr.ops[k].clone();
        now[wr.first[k]] = op.replay(InputList<Tensor>(at.data(), at.size()));
        if (wr.n_out[k] > 1) {
          std::vector<Tensor> m = op.more_outputs();
          for (std::size_t o = 0; o < m.size(); ++o) now[wr.first[k] + 1 + o] = std::move(m[o]);
        }
        ops.push_back(std::move(op));
      }
      // Stacked results are written into their rows, and the step reads the rows (no copy held twice).
      for (std::size_t o = 0; o < wr.outputs.size(); ++o) {
        const LoopWiring::Out& out = wr.outputs[o];
        Tensor& v = now[out.result];
        if (!out.stacked) {
          if (t + 1 == steps) outs[o] = v;
          continue;
        }
        if (t == 0) {
          Shape all = v.shape();
          all.insert(all.begin(), steps);
          outs[o] = Tensor::empty(all, v.dtype());
        }
        Tensor row = outs[o][t];
        std::memcpy(row.raw_data(), v.raw_data(), row.nbytes());
        v = std::move(row);
      }
      if (t == 0) {
        kept = kept_values(wr, std::span<const recur::detail::OpBox>(ops.data(), n_ops));
        // A value no rule reads keeps its shape and dtype only (rules may read those), as a
        // dropped node value does: one stand-in for every step.
        shapes.assign(n, Tensor());
        kept_at.assign(n, -1);
        n_kept = 0;
        for (std::size_t v = 0; v < n; ++v) {
          if (kept.values[v]) kept_at[v] = static_cast<std::int32_t>(n_kept++);
          else if (now[v].defined()) shapes[v] = Tensor(nullptr, 0, now[v].shape(), now[v].dtype());
        }
        values.resize(static_cast<std::size_t>(steps) * n_kept);
      }
      for (std::size_t c = 0; c < prev.size(); ++c) prev[c] = now[wr.carry_result[c]];
      for (std::size_t v = 0; v < n; ++v) {
        if (kept_at[v] >= 0)  // moved: leaves now[v] empty
          values[static_cast<std::size_t>(t) * n_kept + static_cast<std::size_t>(kept_at[v])] = std::move(now[v]);
        else if (now[v].defined()) now[v] = Tensor();  // its buffer back to the pool for the next step
      }
    }
    more.assign(outs.begin() + 1, outs.end());
    return outs[0];
  }
  std::vector<Tensor> more_outputs() const { return std::move(more); }

  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) return backward_values(a);
    else return backward_recorded(a);
  }

  // An op's rule adds in place (GradSink) to a gradient of the loop: the node's input's
  // (the outer sink's), or one of the step's values (kept here while the step runs).
  class StepSink final : public recur::detail::GradSink {
   public:
    StepSink(recur::detail::GradSink* outer, const std::vector<LoopWiring::In>& inputs, std::int64_t t,
             std::span<const Tensor* const> values, std::vector<Tensor>& grads, std::vector<Tensor>& carried)
        : outer_(outer), inputs_(inputs), t_(t), values_(values), grads_(grads), carried_(carried) {}
    std::uint64_t pass() const override { return outer_->pass(); }
    Tensor& dense(std::size_t input) override {
      const LoopWiring::In& s = inputs_[input];
      if (is_node_input(s)) return outer_->dense(s.index);
      Tensor& acc = s.kind == LoopWiring::In::Kind::value ? grads_[s.index] : carried_[s.index];
      const Tensor& x = *values_[input];
      if (!acc.defined()) acc = zeros(x.shape(), x.dtype());
      else if (!acc.storage()->unique()) acc = acc.clone();
      return acc;
    }
    void add(std::size_t input, Tensor g) override {
      const LoopWiring::In& s = inputs_[input];
      if (is_node_input(s)) outer_->add(s.index, std::move(g));
      else accumulate_into(s.kind == LoopWiring::In::Kind::value ? grads_[s.index] : carried_[s.index], std::move(g));
    }
    Tensor& dense_rows(std::size_t input, std::int64_t begin, std::int64_t end, bool& fresh) override {
      const LoopWiring::In& s = inputs_[input];
      if (is_node_input(s)) return outer_->dense_rows(s.index, begin, end, fresh);
      fresh = false;
      return dense(input);
    }

   private:
    bool is_node_input(const LoopWiring::In& s) const { return reads_node_input(s, t_); }
    recur::detail::GradSink* outer_;
    const std::vector<LoopWiring::In>& inputs_;
    std::int64_t t_;
    std::span<const Tensor* const> values_;
    std::vector<Tensor>& grads_;
    std::vector<Tensor>& carried_;
  };

  // The gradient reaching step t's value `result` from outside the step: its row of a
  // stacked output's gradient, or the last output's at the last step.
  Tensor outside(std::size_t result, std::int64_t t, std::span<const Tensor* const> out_grads) const {
    for (std::size_t o = 0; o < w->outputs.size(); ++o) {
      const LoopWiring::Out& out = w->outputs[o];
      if (out.result != result || !out_grads[o] || !out_grads[o]->defined()) continue;
      if (out.stacked) return (*out_grads[o])[t];
      if (t + 1 == steps) return *out_grads[o];
    }
    return Tensor();
  }

  // Steps last to first, each step's ops last to first, their rules on the values forward
  // kept. A step value's gradient adds its shares in the order the tape would add them had
  // each op its node: the stacked output's row first (the stack's node comes after every
  // step), then the next step's reads, then this step's later ops'.
  Grads<Tensor> backward_values(const BackwardArgs<Tensor>& a) const {
    if (!a.sink) fail<ValueError>(name, "its backward runs inside a tape's backward pass only");
    if (planned) {
      planned->backward(a);
      return Grads<Tensor>(a.inputs.size());  // every share went to the tape through a.sink
    }
    const LoopWiring& wr = *w;
    const std::size_t n = wr.n_values, n_ops = wr.ops.size();
    boost::container::small_vector<const Tensor*, 4> out_grads{&a.grad};
    for (std::size_t o = 1; o < wr.outputs.size(); ++o)
      out_grads.push_back(o - 1 < a.more_grads.size() ? &a.more_grads[o - 1] : nullptr);
    const auto G = std::span<const Tensor* const>(out_grads.data(), out_grads.size());
    std::vector<Tensor> g(n), carried(wr.carry_result.size());
    std::vector<const Tensor*> in_values;
    for (std::size_t i = 0; i < a.inputs.size(); ++i) in_values.push_back(&a.inputs[i]);
    boost::container::small_vector<const Tensor*, 8> at;
    boost::container::small_vector<std::uint8_t, 8> needs;
    std::vector<Tensor> more_g;
    // Step t's values: the kept ones, the others' shape-only stand-ins; and the carries' values of step t - 1.
    std::vector<const Tensor*> now(n), prev(wr.carry_result.size());
    auto value_at = [&](std::size_t step, std::size_t v) -> const Tensor* {
      if (kept_at[v] < 0) return &shapes[v];
      const Tensor& held = values[step * n_kept + static_cast<std::size_t>(kept_at[v])];
      return held.defined() ? &held : &shapes[v];
    };
    for (std::int64_t t = steps - 1; t >= 0; --t) {
      const auto step = static_cast<std::size_t>(t);
      for (std::size_t v = 0; v < n; ++v) now[v] = value_at(step, v);
      for (std::size_t c = 0; c < prev.size(); ++c) prev[c] = t > 0 ? value_at(step - 1, wr.carry_result[c]) : nullptr;
      // This step's results: what reached them from outside (a stacked output's row first:
      // the stack's node comes after every step), then from the next step's reads. (Every
      // gradient of step t + 1 was moved on, which leaves it undefined.)
      for (std::size_t v = 0; v < n; ++v)
        if (g[v].defined()) g[v] = Tensor();
      for (const LoopWiring::Out& out : wr.outputs) g[out.result] = outside(out.result, t, G);
      for (std::size_t c = 0; c < carried.size(); ++c) {
        const std::size_t r = wr.carry_result[c];
        if (t + 1 < steps) g[r] = std::move(carried[c]);  // started from outside(r, t) at step t + 1
        else if (!g[r].defined()) g[r] = outside(r, t, G);
        carried[c] = t > 0 ? outside(r, t - 1, G) : Tensor();  // the previous step's value's share
      }
      const std::vector<std::uint8_t>& takes = t == 0 ? wr.grad_first : wr.grad_later;
      for (std::size_t k = n_ops; k-- > 0;) {
        if (!wr.takes_gradient[k]) continue;
        const std::size_t v0 = wr.first[k], n_out = wr.n_out[k];
        bool any = g[v0].defined();
        more_g.assign(n_out - 1, Tensor());
        for (std::size_t o = 1; o < n_out; ++o)
          if (g[v0 + o].defined()) {
            more_g[o - 1] = std::move(g[v0 + o]);
            g[v0 + o] = Tensor();
            any = true;
          }
        if (!any) continue;
        const Tensor gk = g[v0].defined() ? std::move(g[v0]) : zeros(now[v0]->shape(), now[v0]->dtype());
        inputs_of(k, t, in_values, [&](std::size_t v) { return now[v]; }, [&](std::size_t c) { return prev[c]; }, at);
        needs.clear();
        for (const LoopWiring::In& s : wr.inputs[k]) {
          if (s.kind == LoopWiring::In::Kind::value) needs.push_back(takes[s.index]);
          else if (reads_node_input(s, t)) needs.push_back(a.needs[s.index]);
          else needs.push_back(wr.grad_later[wr.carry_result[s.index]]);
        }
        StepSink sink(a.sink, wr.inputs[k], t, std::span<const Tensor* const>(at.data(), at.size()), g, carried);
        const recur::detail::OpBox& op = ops[static_cast<std::size_t>(t) * n_ops + k];
        Grads<Tensor> gs = op.backward(BackwardArgs<Tensor>{
            gk, InputList<Tensor>(at.data(), at.size()), *now[v0],
            std::span<const std::uint8_t>(needs.data(), needs.size()), &sink,
            std::span<const Tensor>(more_g.data(), more_g.size())});
        for (std::size_t j = 0; j < needs.size() && j < gs.size(); ++j) {
          if (!needs[j] || !gs[j].defined()) continue;
          const LoopWiring::In& s = wr.inputs[k][j];
          if (s.kind == LoopWiring::In::Kind::value) accumulate_into(g[s.index], std::move(gs[j]));
          else if (reads_node_input(s, t)) a.sink->add(s.index, std::move(gs[j]));
          else accumulate_into(carried[s.index], std::move(gs[j]));
        }
      }
      // The rows this step read: their gradients into their nodes' rows t (as x[t]'s rule does).
      for (std::size_t r = 0; r < wr.row_source.size(); ++r) {
        Tensor& gr = g[wr.n_op_values + r];
        const std::uint32_t source = wr.row_source[r];
        if (!gr.defined() || !a.needs[source]) continue;
        bool fresh = false;
        Tensor& acc = a.sink->dense_rows(source, t, t + 1, fresh);
        const recur::detail::AxisBlocks rows(acc.shape(), 0);
        recur::detail::scatter_add_rows_into(acc, gr, rows, 1, [t](std::int64_t) { return t; }, fresh);
        gr = Tensor();
      }
    }
    return Grads<Tensor>(a.inputs.size());  // every share went to the tape through a.sink
  }

  // create_graph: the steps recorded op by op on aliases of the inputs and differentiated
  // again (as the fused layers do: nn/fused_recurrence.cpp).
  Grads<Var> backward_recorded(const BackwardArgs<Var>& a) const {
    return transactional(a.inputs[0], [&] {
      const LoopWiring& wr = *w;
      std::vector<Var> in;
      for (std::size_t i = 0; i < a.inputs.size(); ++i) in.push_back(reshape(a.inputs[i], a.inputs[i].shape()));
      std::vector<Var> now(wr.n_values), prev(wr.carry_result.size());
      std::vector<std::vector<Var>> stacked(wr.outputs.size());
      std::vector<Var> last(wr.outputs.size());
      for (std::int64_t t = 0; t < steps; ++t) {
        for (std::size_t r = 0; r < wr.row_source.size(); ++r)
          now[wr.n_op_values + r] = index(in[wr.row_source[r]], 0, t);
        for (std::size_t k = 0; k < wr.ops.size(); ++k) {
          std::vector<Var> args;
          for (const LoopWiring::In& s : wr.inputs[k]) {
            if (s.kind == LoopWiring::In::Kind::value) args.push_back(now[s.index]);
            else if (reads_node_input(s, t)) args.push_back(in[s.index]);
            else args.push_back(prev[s.index]);
          }
          const std::vector<Var> outs =
              record_program_op_outputs(a.grad.tape(), wr.ops[k], args, wr.takes_gradient[k] != 0);
          for (std::size_t o = 0; o < outs.size(); ++o) now[wr.first[k] + o] = outs[o];
        }
        for (std::size_t o = 0; o < wr.outputs.size(); ++o) {
          if (wr.outputs[o].stacked) stacked[o].push_back(now[wr.outputs[o].result]);
          else if (t + 1 == steps) last[o] = now[wr.outputs[o].result];
        }
        for (std::size_t c = 0; c < prev.size(); ++c) prev[c] = now[wr.carry_result[c]];
      }
      Var total;
      for (std::size_t o = 0; o < wr.outputs.size(); ++o) {
        const Var& go = o == 0 ? a.grad : (o - 1 < a.more_grads.size() ? a.more_grads[o - 1] : Var());
        if (!go.defined()) continue;
        const Var out = wr.outputs[o].stacked ? stack(std::span<const Var>(stacked[o]), 0) : last[o];
        const Var term = sum(out * go);
        total = total.defined() ? total + term : term;
      }
      std::vector<Var> wanted;
      for (std::size_t i = 0; i < in.size(); ++i)
        if (a.needs_grad(i)) wanted.push_back(in[i]);
      Grads<Var> out(a.inputs.size());
      if (!total.defined() || wanted.empty()) return out;
      const std::vector<Var> gs = grad(std::span<const Var>(&total, 1), wanted, {}, {.create_graph = true});
      for (std::size_t i = 0, next = 0; i < in.size(); ++i)
        if (a.needs_grad(i)) out[i] = gs[next++];
      return out;
    });
  }
};

}  // namespace

namespace {

// What an op input reads, or why the loop cannot say.
struct Resolved {
  LoopWiring::In in;
  std::string refusal;
};

// The wiring of `program` under `spec`; its node inputs are the carries' initial values
// (input c: carry c), then in order of first use the invariant arguments, the values
// recorded before the loop, the constants and the nodes read by rows (`externals`).
class Wirer {
 public:
  Wirer(const StepProgram& program, const LoopSpec& spec) : p_(program), spec_(spec) {}

  std::string operator()(LoopWiring& w, std::vector<ValueRef>* externals) {
    w_ = &w;
    externals_ = externals;
    w.n_inputs = spec_.carries.size();
    if (!p_.shareds.empty() || !p_.updates.empty() || !p_.implicit_updates.empty())
      return "the step reads or updates a Shared (or a random stream)";
    for (const StepOp& op : p_.ops) {
      if (!op.op.copyable()) return "op " + std::string(op.op.name()) + " cannot be copied";
      w.first.push_back(w.n_op_values);
      w.n_out.push_back(op.outputs);
      w.takes_gradient.push_back(op.takes_gradient);
      w.n_op_values += op.outputs;
      w.ops.push_back(op.op.clone());
    }
    for (const StepOp& op : p_.ops) {
      std::vector<LoopWiring::In> ins;
      for (const ValueRef& r : op.inputs) {
        Resolved got = resolve(r);
        if (!got.refusal.empty()) return got.refusal;
        ins.push_back(got.in);
      }
      w.inputs.push_back(std::move(ins));
    }
    w.n_values = w.n_op_values + rows_.size();
    for (const LoopSpec::Carry& c : spec_.carries) {
      if (c.result.kind != Kind::local) return "a carried value is not made by the step's ops";
      w.carry_result.push_back(w.first[c.result.index] + c.result.output);
    }
    for (const LoopSpec::Output& o : spec_.outputs) {
      if (o.result.kind != Kind::local) return "an output is not made by the step's ops";
      const std::size_t v = w.first[o.result.index] + o.result.output;
      for (const LoopWiring::Out& seen : w.outputs)
        if (seen.result == v) return "two outputs are the same value";
      w.outputs.push_back({v, o.stacked});
    }
    if (w.outputs.empty()) return "the loop has no output";
    return {};
  }

  // Per value, whether it takes a gradient (an op's does where one of its inputs does and the
  // op takes gradients), at step 0 (the carries' initial values) and at the later steps
  // (the carries' values made by the steps before); `external` per node input.
  void mark_gradients(const std::vector<std::uint8_t>& external) {
    LoopWiring& w = *w_;
    auto pass = [&](const std::vector<std::uint8_t>& carry_takes) {
      std::vector<std::uint8_t> takes(w.n_values, 0);
      for (std::size_t r = 0; r < w.row_source.size(); ++r) takes[w.n_op_values + r] = external[w.row_source[r]];
      for (std::size_t k = 0; k < w.ops.size(); ++k) {
        bool any = false;
        for (const LoopWiring::In& in : w.inputs[k]) {
          if (in.kind == LoopWiring::In::Kind::value) any = any || takes[in.index];
          else if (in.kind == LoopWiring::In::Kind::external) any = any || external[in.index];
          else any = any || carry_takes[in.index];
        }
        for (std::size_t o = 0; o < w.n_out[k]; ++o) takes[w.first[k] + o] = any && w.takes_gradient[k];
      }
      return takes;
    };
    std::vector<std::uint8_t> carry_takes(w.carry_result.size());
    for (std::size_t c = 0; c < carry_takes.size(); ++c) carry_takes[c] = external[c];
    w.grad_first = pass(carry_takes);
    // Later steps: a carry takes a gradient once its value at some step does (each round
    // turns at least one more carry, or none ever will).
    w.grad_later = w.grad_first;
    for (std::size_t round = 0; round <= carry_takes.size(); ++round) {
      for (std::size_t c = 0; c < carry_takes.size(); ++c)
        carry_takes[c] = carry_takes[c] || w.grad_later[w.carry_result[c]];
      w.grad_later = pass(carry_takes);
    }
  }

 private:
  std::uint32_t external(const ValueRef& r) {
    for (std::size_t e = 0; e < externals_->size(); ++e)
      if ((*externals_)[e] == r) return static_cast<std::uint32_t>(spec_.carries.size() + e);
    externals_->push_back(r);
    return static_cast<std::uint32_t>(w_->n_inputs++);
  }

  Resolved resolve(const ValueRef& r) {
    using In = LoopWiring::In;
    switch (r.kind) {
      case Kind::local: return {{In::Kind::value, static_cast<std::uint32_t>(w_->first[r.index] + r.output)}, {}};
      case Kind::outer:
      case Kind::literal: return {{In::Kind::external, external(r)}, {}};
      case Kind::row: {
        const std::uint32_t source = external({Kind::outer, r.index, 0});
        for (std::size_t k = 0; k < rows_.size(); ++k)
          if (rows_[k] == source) return {{In::Kind::value, static_cast<std::uint32_t>(w_->n_op_values + k)}, {}};
        rows_.push_back(source);
        w_->row_source.push_back(source);
        return {{In::Kind::value, static_cast<std::uint32_t>(w_->n_op_values + rows_.size() - 1)}, {}};
      }
      case Kind::arg: {
        if (r.index >= spec_.args.size()) return {{}, "an argument the loop does not know"};
        const LoopArg& arg = spec_.args[r.index];
        if (arg.kind == LoopArg::Kind::carried) return {{In::Kind::carried, arg.carry}, {}};
        if (arg.kind == LoopArg::Kind::invariant) return {{In::Kind::external, external(r)}, {}};
        return {{}, "the step reads a sequence's element"};
      }
      default: return {{}, "the step reads a Shared"};
    }
  }

  const StepProgram& p_;
  const LoopSpec& spec_;
  LoopWiring* w_ = nullptr;
  std::vector<ValueRef>* externals_ = nullptr;
  std::vector<std::uint32_t> rows_;
};

}  // namespace

namespace {
// On unless RECUR_SCAN_LOOP_NODE=off (the test suite runs the scan tests both ways).
std::atomic<bool> loop_node_on{[] {
  const char* v = std::getenv("RECUR_SCAN_LOOP_NODE");
  return !(v && std::string_view(v) == "off");
}()};
}  // namespace
void set_loop_node_switch(bool on) { loop_node_on.store(on, std::memory_order_relaxed); }
bool loop_node_switch() { return loop_node_on.load(std::memory_order_relaxed); }

std::optional<std::vector<Var>> record_loop(Tape& tape, const StepProgram& program, const LoopSpec& spec) {
  auto w = std::make_shared<LoopWiring>();
  std::vector<ValueRef> externals;
  Wirer wirer(program, spec);
  if (!wirer(*w, &externals).empty()) return std::nullopt;
  std::vector<Var> inputs;
  for (const LoopSpec::Carry& c : spec.carries) inputs.push_back(c.initial);
  for (const ValueRef& r : externals) {
    if (r.kind == Kind::outer) inputs.push_back(TapeAccess::handle(tape, r.index));
    else if (r.kind == Kind::literal) inputs.push_back(tape.constant(program.literals[r.index]));
    else inputs.push_back(spec.args[r.index].value);
  }
  std::vector<std::uint8_t> takes(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) takes[i] = TapeAccess::requires_grad(tape, inputs[i].id());
  wirer.mark_gradients(takes);
  return record_outputs(CapturedLoop(std::move(w), spec.steps), inputs);
}

}  // namespace recur::scan_engine::detail
