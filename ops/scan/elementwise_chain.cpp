// A fused chain of elementwise ops as one op (elementwise_chain_detail.hpp): its forward
// here, its backward on values in elementwise_chain_backward.cpp, what that backward reads in
// elementwise_chain_plan.cpp; under create_graph, the chain's ops recorded (recorded_backward).
#include <recur/ops/scan/elementwise_chain_detail.hpp>

#include <algorithm>
#include <string>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/scan/elementwise_chain_backward_detail.hpp>
#include <recur/ops/scan/elementwise_chain_blocks_detail.hpp>
#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>
#include <recur/ops/scan/elementwise_chain_plan_detail.hpp>
#include <recur/ops/scan/elementwise_chain_raw_detail.hpp>
#include <recur/ops/scan/step_program_detail.hpp>

namespace recur::scan_engine::detail {

std::optional<ChainCode> chain_code(std::string_view op) {
  static constexpr std::pair<std::string_view, ChainCode> table[] = {
      {"add", ChainCode::add},   {"sub", ChainCode::sub},         {"mul", ChainCode::mul},
      {"div", ChainCode::div},   {"neg", ChainCode::neg},         {"tanh", ChainCode::tanh},
      {"sigmoid", ChainCode::sigmoid}, {"exp", ChainCode::exp}, {"relu", ChainCode::relu}};
  for (const auto& [name, code] : table)
    if (name == op) return code;
  return std::nullopt;
}

namespace {

using chain::ChainBlocks;
using chain::scratch;

struct ElementwiseChain {
  static constexpr std::string_view name = "scan_elementwise_chain";
  // Its backward runs forward again when its values were dropped: a checkpointed loop drops
  // them even where it keeps the chain's output (the step's), and makes them once per pass.
  static constexpr bool remakes_saved = true;
  std::shared_ptr<const ChainProgram> program;
  explicit ElementwiseChain(std::shared_ptr<const ChainProgram> p) : program(std::move(p)) {}
  // From the last forward with gradients on (`saved`), what backward reads: the values that
  // stay inside the chain ([instructions, elements], a row each) and the outputs after the
  // first that it reads (undefined where it does not: their nodes hold them). The first it
  // reads from its node (BackwardArgs::output), which a loop may point at its stacked copy:
  // a copy of its own would be held twice. And the outputs after the first, for more_outputs().
  mutable Tensor inner;
  // (Two inline, as many as a cell has (h and c): a copy of the op is made at every step, and
  // its size is what a loop holds per step beside the values.)
  mutable boost::container::small_vector<Tensor, 2> outputs;
  mutable std::vector<Tensor> more;
  mutable bool saved = false;

  ElementwiseChain fresh_copy() const { return ElementwiseChain(program); }

  // Where instruction k's values are: its output's buffer, its row of `inner`, or nowhere
  // (nullptr: backward does not read them).
  template <class T>
  boost::container::small_vector<T*, 32> value_rows() const {
    const ChainProgram& p = *program;
    boost::container::small_vector<T*, 32> rows(p.code.size(), nullptr);
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (outputs[o].defined()) rows[p.outputs[o]] = outputs[o].template data<T>();
    std::int64_t row = 0;
    const std::int64_t total = inner.defined() ? inner.size(1) : 0;  // [kept, elements]
    for (std::size_t k : p.kept) rows[k] = inner.template data<T>() + row++ * total;
    return rows;
  }

  OpAttributes attributes() const {
    std::string ops;
    for (const auto& op : program->ops) {
      if (!ops.empty()) ops.push_back(' ');
      ops.append(op.name());
    }
    return {{"ops", ops}, {"outputs", ints_attribute(program->outputs)}};
  }
  // The outputs it saved, and the inputs whose slots its rules read (all of them when it
  // has to run forward again first: recorded without gradients, or released).
  bool backward_reads(std::size_t which) const {
    if (which == recur::detail::kBackwardOutput || !saved) return true;
    const ChainProgram& p = *program;
    for (std::size_t j = 0; j < p.slots_read.size(); ++j)
      if (p.slots_read[j] && p.slots[j].input == which) return true;
    return false;
  }
  Grads<Tensor> saved_tensors() const {
    Grads<Tensor> held;
    for (const Tensor& o : outputs)
      if (o.defined()) held.push_back(o);
    if (inner.defined()) held.push_back(inner);
    for (const Tensor& o : more)  // outputs not yet taken by more_outputs()
      if (o.defined()) held.push_back(o);
    return held;
  }
  void drop_saved() const {
    inner = Tensor();
    outputs.clear();
    more.clear();  // a forward run again for backward (or a replay) leaves them unread
    saved = false;
  }

  // With gradients on, every value backward reads is written where it will read it (the
  // outputs in their own buffers, so that a kept output does not hold the others); the
  // others, and every value without gradients, stay in a block's scratch.
  Tensor forward(std::span<const Tensor> inputs) const {
    boost::container::small_vector<const Tensor*, 8> at;
    for (const Tensor& t : inputs) at.push_back(&t);
    return forward_list(InputList<Tensor>(at.data(), at.size()));
  }
  // forward on the inputs as a captured step replays them (the tape's values, not copied).
  // A chain whose elements fit one block runs its compiled calls (ChainLayout::forward_calls),
  // others the interpreter (ChainBlocks), the same kernels in the same order.
  Tensor forward_list(const InputList<Tensor>& inputs) const {
    const ChainProgram& p = *program;
    boost::container::small_vector<Tensor, 4> outs;
    dispatch_floating(name, inputs[0].dtype(), [&]<class T>() {
      std::shared_ptr<const chain::ChainLayout> layout_held;
      const chain::ChainLayout& layout = chain::layout_of(p, inputs, layout_held);
      for (std::size_t o = 0; o < p.outputs.size(); ++o) outs.push_back(Tensor::empty(p.shape, inputs[0].dtype()));
      const bool keep = grad_enabled();
      boost::container::small_vector<T*, 32> rows;  // where backward reads each value (nullptr: nowhere)
      if (keep) {
        outputs.assign(outs.begin(), outs.end());
        const auto n_inner = static_cast<std::int64_t>(p.kept.size());
        inner = n_inner > 0 ? Tensor::empty({n_inner, layout.total}, inputs[0].dtype()) : Tensor();
        rows = value_rows<T>();
      } else {
        drop_saved();
        rows.assign(p.code.size(), nullptr);
      }
      const std::span<T* const> where(rows.data(), rows.size());
      if (layout.forward_calls && chain::compiled_chains())
        run_compiled<T>(layout, inputs, where, outs);
      else
        run_interpreted<T>(layout, inputs, where, outs);
      if (!keep) return;
      for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (o == 0 || !p.outputs_read[o]) outputs[o] = Tensor();  // the first: backward reads the node's
      saved = true;
    });
    more.assign(outs.begin() + 1, outs.end());
    return outs[0];
  }
  std::vector<Tensor> more_outputs() const { return std::move(more); }

  // Each value into rows[k] where it is not nullptr, else into a block's scratch; the outputs
  // that are not in place (no gradients) copied from the scratch into `outs`.
  template <class T>
  void run_interpreted(const chain::ChainLayout& layout, const InputList<Tensor>& inputs, std::span<T* const> rows,
                       boost::container::small_vector<Tensor, 4>& outs) const {
    const ChainProgram& p = *program;
    ChainBlocks<T> blocks(p, layout, inputs);
    // Each tile's values of a block in its own part of the scratch.
    const std::int64_t tiles = blocks.tiles(), per_tile = static_cast<std::int64_t>(p.code.size()) * blocks.block();
    T* const values = scratch<T>(0, static_cast<std::size_t>(tiles * per_tile));
    // Per tile, where each value of its block goes (made before the tiles: a helper must not allocate).
    const std::size_t n_code = p.code.size();
    boost::container::small_vector<T*, 64> where_all(static_cast<std::size_t>(tiles) * n_code);
    blocks.each_block_in_tiles(tiles, [&](std::int64_t tile, std::int64_t, std::int64_t begin, std::int64_t n) {
      T** const where = where_all.data() + static_cast<std::size_t>(tile) * n_code;
      for (std::size_t k = 0; k < n_code; ++k)
        where[k] = rows[k] ? rows[k] + begin : values + tile * per_tile + static_cast<std::int64_t>(k) * blocks.block();
      blocks.run(begin, n, [where](std::size_t k) { return where[k]; });
      for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (!rows[p.outputs[o]]) std::copy_n(where[p.outputs[o]], n, outs[o].template data<T>() + begin);
    });
  }

  // The same by the compiled calls over the one block: an output not kept written into its
  // own buffer (a second listing of one copied).
  template <class T>
  void run_compiled(const chain::ChainLayout& layout, const InputList<Tensor>& inputs, std::span<T* const> rows,
                    boost::container::small_vector<Tensor, 4>& outs) const {
    const ChainProgram& p = *program;
    boost::container::small_vector<T*, 32> where(rows.begin(), rows.end());
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (!where[p.outputs[o]]) where[p.outputs[o]] = outs[o].template data<T>();
    boost::container::small_vector<const T*, 8> in(inputs.size());
    for (std::size_t i = 0; i < inputs.size(); ++i) in[i] = inputs[i].template data<T>();
    chain::run_forward<T>(p, layout, std::span<const T* const>(in.data(), in.size()),
                          std::span<T* const>(where.data(), where.size()));
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (where[p.outputs[o]] != outs[o].template data<T>())
        std::copy_n(where[p.outputs[o]], layout.total, outs[o].template data<T>());
  }

  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      static const Tensor none;  // an output's gradient that did not reach the chain
      boost::container::small_vector<const Tensor*, 4> grads{&a.grad};
      for (std::size_t o = 1; o < program->outputs.size(); ++o)
        grads.push_back(o - 1 < a.more_grads.size() ? &a.more_grads[o - 1] : &none);
      const bool remade = !saved;
      if (remade) {  // recorded without gradients, released, or dropped while kept: make the values now
        EnableGrad on;
        forward_list(a.inputs);
      }
      Grads<Tensor> input_grads = dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        const auto rows = value_rows<T>();
        boost::container::small_vector<const T*, 32> values(rows.begin(), rows.end());
        if (program->outputs_read[0]) values[program->outputs[0]] = a.output.template data<T>();
        return chain::backward<T>(*program, a.inputs, std::span<const T* const>(values.data(), values.size()),
                                 InputList<Tensor>(grads.data(), grads.size()), a.needs);
      });
      if (remade) drop_saved();  // made for this pass only: held, they would add up over the loop
      return input_grads;
    } else {
      return recorded_backward(a);
    }
  }

  // create_graph: the chain's ops recorded from its inputs, then their rules in reverse.
  Grads<Var> recorded_backward(const BackwardArgs<Var>& a) const {
    const ChainProgram& p = *program;
    Tape& tape = a.grad.tape();
    std::vector<Var> values;
    // A slot as a Var: the input, or the slice of its columns the chain reads in place.
    auto slot_var = [&](std::size_t j) {
      const ChainSlot& slot = p.slots[j];
      const Var& in = a.inputs[slot.input];
      if (slot.column < 0) return in;
      const std::int64_t width = p.shape.back();
      return slice(in, in.rank() - 1, slot.column, slot.column + width);
    };
    std::vector<Var> slots;
    for (std::size_t j = 0; j < p.slots.size(); ++j) slots.push_back(slot_var(j));
    auto operand = [&](const ChainOperand& o) { return o.is_input ? slots[o.index] : values[o.index]; };
    for (std::size_t k = 0; k < p.code.size(); ++k) {
      std::vector<Var> in{operand(p.code[k].a)};
      if (!unary(p.code[k].code)) in.push_back(operand(p.code[k].b));
      values.push_back(record_program_op(tape, p.ops[k], in));
    }
    std::vector<Var> g(p.code.size());
    auto accumulate = [](Var& acc, const Var& v) { acc = acc.defined() ? acc + v : v; };
    for (std::size_t o = 0; o < p.outputs.size(); ++o) {
      const Var& go = o == 0 ? a.grad : (o - 1 < a.more_grads.size() ? a.more_grads[o - 1] : Var());
      if (go.defined()) accumulate(g[p.outputs[o]], go);
    }
    std::vector<Var> slot_grads(p.slots.size());
    for (std::size_t k = p.code.size(); k-- > 0;) {
      if (!g[k].defined()) continue;
      const ChainInstruction& in = p.code[k];
      std::vector<ChainOperand> operands{in.a};
      if (!unary(in.code)) operands.push_back(in.b);
      std::vector<Var> held;
      for (const auto& o : operands) held.push_back(operand(o));
      std::vector<const Var*> ptrs;
      for (const Var& v : held) ptrs.push_back(&v);
      std::vector<std::uint8_t> needs(operands.size(), 1);
      const Grads<Var> gs = p.ops[k].backward(
          BackwardArgs<Var>{g[k], InputList<Var>(ptrs.data(), ptrs.size()), values[k], needs, nullptr, {}});
      for (std::size_t i = 0; i < operands.size(); ++i) {
        if (i >= gs.size() || !gs[i].defined()) continue;
        if (operands[i].is_input) accumulate(slot_grads[operands[i].index], gs[i]);
        else accumulate(g[operands[i].index], gs[i]);
      }
    }
    // Each slot's gradient to its input (a slice's through the slice's own rule).
    Grads<Var> result(a.inputs.size());
    for (std::size_t j = 0; j < p.slots.size(); ++j) {
      if (!slot_grads[j].defined()) continue;
      const std::uint16_t in = p.slots[j].input;
      if (p.slots[j].column < 0) {
        accumulate(result[in], slot_grads[j]);
        continue;
      }
      const recur::detail::OpBox& slice_rule = TapeAccess::node(tape, slots[j].id()).op;
      if (!slice_rule || !a.needs_grad(in)) continue;  // the input takes no gradient
      const Var* inputs[] = {&a.inputs[in]};
      const std::uint8_t need = 1;
      const Grads<Var> gs = slice_rule.backward(BackwardArgs<Var>{
          slot_grads[j], InputList<Var>(inputs, 1), slots[j], std::span<const std::uint8_t>(&need, 1), nullptr, {}});
      accumulate(result[in], gs[0]);
    }
    return result;
  }
};

}  // namespace

const ChainProgram* chain_program_of(const recur::detail::OpBox& op) {
  const ElementwiseChain* chain = op.as<ElementwiseChain>();
  return chain ? chain->program.get() : nullptr;
}

recur::detail::OpBox elementwise_chain_op(std::shared_ptr<ChainProgram> program) {
  chain::plan_backward(*program);
  return recur::detail::OpBox::make<recur::detail::kListArity>(ElementwiseChain(std::move(program)));
}

}  // namespace recur::scan_engine::detail
