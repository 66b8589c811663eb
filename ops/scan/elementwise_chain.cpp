// A fused chain of elementwise ops (elementwise_chain_detail.hpp).
#include <recur/ops/scan/elementwise_chain_detail.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/scan/step_program_detail.hpp>
#include <recur/ops/unary.hpp>

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

bool unary(ChainCode c) { return c >= ChainCode::neg; }

// A thread's scratch of at least n elements of T, kept between calls: a chain runs once per
// step, and a fresh buffer each time would cost more than its arithmetic.
template <class T>
T* scratch(std::size_t slot, std::size_t n) {
  thread_local std::vector<T> buffers[3];
  std::vector<T>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

// Elements per block: whole periods of the broadcast inputs, about 2048 elements.
std::int64_t block_size(std::int64_t total, std::int64_t period) {
  return std::min(total, period * std::max<std::int64_t>(1, 2048 / period));
}

// The inputs of a chain as each block reads them, and its instructions run over a block.
template <class T>
class ChainBlocks {
 public:
  ChainBlocks(const ChainProgram& p, std::span<const Tensor> inputs) : p_(p), inputs_(inputs) {
    total_ = numel(p.shape);
    width_ = p.shape.empty() ? 1 : p.shape.back();
    period_ = 1;
    for (const ChainSlot& slot : p.slots) {
      if (slot.column >= 0) period_ = std::max(period_, width_);  // blocks of whole rows
      else if (inputs[slot.input].numel() != total_) period_ = std::max(period_, inputs[slot.input].numel());
    }
    block_ = block_size(total_, period_);
    // A broadcast input reads the same in every block (blocks start at whole periods); a
    // slot of columns is gathered for each block (load).
    own_.resize(p.slots.size());
    for (std::size_t j = 0; j < p.slots.size(); ++j) {
      const ChainSlot& slot = p.slots[j];
      const Tensor& in = inputs[slot.input];
      if (slot.column < 0 && in.numel() == total_) continue;
      own_[j].resize(static_cast<std::size_t>(block_));
      if (slot.column >= 0) continue;
      const T* x = in.data<T>();
      const std::int64_t n = in.numel();
      for (std::int64_t i = 0; i < block_; ++i) own_[j][i] = x[i % n];
    }
  }
  std::int64_t total() const { return total_; }
  std::int64_t block() const { return block_; }
  std::int64_t width() const { return width_; }
  // f(begin, n) for each block of elements [begin, begin + n), in order.
  template <class F>
  void each_block(F&& f) const {
    for (std::int64_t begin = 0; begin < total_; begin += block_) f(begin, std::min(block_, total_ - begin));
  }

  // Gathers the column slots' elements [begin, begin + n) (whole rows).
  void load(std::int64_t begin, std::int64_t n) {
    for (std::size_t j = 0; j < p_.slots.size(); ++j) {
      const ChainSlot& slot = p_.slots[j];
      if (slot.column < 0) continue;
      const Tensor& in = inputs_[slot.input];
      const std::int64_t stride = in.shape().back();
      const T* x = in.data<T>() + (begin / width_) * stride + slot.column;
      for (std::int64_t row = 0; row < n / width_; ++row)
        std::copy_n(x + row * stride, width_, own_[j].data() + row * width_);
    }
  }

  // An operand's elements [begin, begin + n) (after load); `values(k)` gives instruction k's.
  template <class Values>
  const T* operand(const ChainOperand& o, std::int64_t begin, Values&& values) const {
    if (!o.is_input) return values(o.index);
    if (own_[o.index].empty()) return inputs_[p_.slots[o.index].input].data<T>() + begin;
    return own_[o.index].data();
  }

  // Every instruction's value over elements [begin, begin + n), into values(k).
  template <class Values>
  void run(std::int64_t begin, std::int64_t n, Values&& values) {
    load(begin, n);
    for (std::size_t k = 0; k < p_.code.size(); ++k) {
      const ChainInstruction& in = p_.code[k];
      const T* a = operand(in.a, begin, values);
      const T* b = unary(in.code) ? nullptr : operand(in.b, begin, values);
      T* y = values(k);
      switch (in.code) {
        case ChainCode::add: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i]; break;
        case ChainCode::sub: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] - b[i]; break;
        case ChainCode::mul: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i]; break;
        case ChainCode::div: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] / b[i]; break;
        case ChainCode::neg: for (std::int64_t i = 0; i < n; ++i) y[i] = -a[i]; break;
        case ChainCode::tanh: recur::detail::tanh_values(a, y, n); break;
        case ChainCode::sigmoid: recur::detail::sigmoid_values(a, y, n); break;
        case ChainCode::exp: for (std::int64_t i = 0; i < n; ++i) y[i] = std::exp(a[i]); break;
        case ChainCode::relu: for (std::int64_t i = 0; i < n; ++i) y[i] = a[i] <= 0 ? T(0) : a[i]; break;
      }
    }
  }

 private:
  const ChainProgram& p_;
  std::span<const Tensor> inputs_;
  std::int64_t total_ = 0, width_ = 1, period_ = 1, block_ = 1;
  std::vector<std::vector<T>> own_;  // per slot: its repeats, or its gathered columns; empty: read in place
};

// r = c (first contribution) or r += c, over n elements.
template <class T, class C>
void put(T* __restrict r, bool add, std::int64_t n, C&& c) {
  if (add) {
    for (std::int64_t i = 0; i < n; ++i) r[i] += c(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) r[i] = c(i);
  }
}

// The chain's backward on values: its rules per element, block by block, reading the
// values forward kept (values[k]: instruction k's, every element). Gradient registers per value and per
// input live in scratch; an input's gradient is written once per block.
template <class T>
Grads<Tensor> chain_backward(const ChainProgram& p, std::span<const Tensor> inputs, std::span<const T* const> values,
                             std::span<const Tensor> out_grads, std::span<const std::uint8_t> needs) {
  ChainBlocks<T> blocks(p, inputs);
  const std::int64_t block = blocks.block(), total = blocks.total(), width = blocks.width();
  const std::size_t n_code = p.code.size(), n_slots = p.slots.size();
  Grads<Tensor> grads(inputs.size());
  for (std::size_t j = 0; j < n_slots; ++j) {
    const std::uint16_t in = p.slots[j].input;
    if (!needs[in] || grads[in].defined()) continue;
    const bool whole = p.slots[j].column < 0 && inputs[in].numel() == total;
    grads[in] = whole ? Tensor::empty(inputs[in].shape(), inputs[in].dtype()) : zeros(inputs[in].shape(), inputs[in].dtype());
  }
  T* const regs = scratch<T>(1, (n_code + n_slots) * static_cast<std::size_t>(block));
  std::vector<std::uint8_t> written(n_code + n_slots);
  blocks.each_block([&](std::int64_t begin, std::int64_t n) {
    auto value = [&](std::size_t k) { return values[k] + begin; };
    blocks.load(begin, n);
    std::fill(written.begin(), written.end(), 0);
    // Register r: value r's gradient (r < n_code), or slot r - n_code's.
    auto reg = [&](std::size_t r) { return regs + r * block; };
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (out_grads[o].defined()) {
        const std::size_t r = p.outputs[o];
        put(reg(r), written[r], n, [src = out_grads[o].data<T>() + begin](std::int64_t i) { return src[i]; });
        written[r] = 1;
      }
    for (std::size_t k = n_code; k-- > 0;) {
      if (!written[k]) continue;  // no gradient reached this value
      const ChainInstruction& in = p.code[k];
      const T* gy = reg(k);
      const T* y = value(k);
      const T* a = blocks.operand(in.a, begin, value);
      const T* b = unary(in.code) ? nullptr : blocks.operand(in.b, begin, value);
      // Adds c(i) into operand o's register, when it wants a gradient.
      auto add = [&](const ChainOperand& o, auto&& c) {
        if (o.is_input && !needs[p.slots[o.index].input]) return;
        const std::size_t r = o.is_input ? n_code + o.index : o.index;
        put(reg(r), written[r], n, c);
        written[r] = 1;
      };
      switch (in.code) {
        case ChainCode::add:
          add(in.a, [gy](std::int64_t i) { return gy[i]; });
          add(in.b, [gy](std::int64_t i) { return gy[i]; });
          break;
        case ChainCode::sub:
          add(in.a, [gy](std::int64_t i) { return gy[i]; });
          add(in.b, [gy](std::int64_t i) { return -gy[i]; });
          break;
        case ChainCode::mul:
          add(in.a, [gy, b](std::int64_t i) { return gy[i] * b[i]; });
          add(in.b, [gy, a](std::int64_t i) { return gy[i] * a[i]; });
          break;
        case ChainCode::div:  // d(a/b) = g/b, -g y/b
          add(in.a, [gy, b](std::int64_t i) { return gy[i] / b[i]; });
          add(in.b, [gy, y, b](std::int64_t i) { return -(gy[i] * y[i] / b[i]); });
          break;
        case ChainCode::neg: add(in.a, [gy](std::int64_t i) { return -gy[i]; }); break;
        case ChainCode::tanh: add(in.a, [gy, y](std::int64_t i) { return gy[i] * (T(1) - y[i] * y[i]); }); break;
        case ChainCode::sigmoid:
          add(in.a, [gy, y](std::int64_t i) { return gy[i] * y[i] * (T(1) - y[i]); });
          break;
        case ChainCode::exp: add(in.a, [gy, y](std::int64_t i) { return gy[i] * y[i]; }); break;
        case ChainCode::relu: add(in.a, [gy, a](std::int64_t i) { return a[i] > 0 ? gy[i] : T(0); }); break;
      }
    }
    for (std::size_t j = 0; j < n_slots; ++j) {  // the slots' gradients of this block, into their inputs'
      const ChainSlot& slot = p.slots[j];
      if (!needs[slot.input] || !written[n_code + j]) {
        if (needs[slot.input] && slot.column < 0 && inputs[slot.input].numel() == total)
          std::fill_n(grads[slot.input].data<T>() + begin, n, T(0));
        continue;
      }
      const T* g = reg(n_code + j);
      T* d = grads[slot.input].data<T>();
      const std::int64_t size = inputs[slot.input].numel();
      if (slot.column >= 0) {  // its columns of each row
        const std::int64_t stride = inputs[slot.input].shape().back();
        T* row0 = d + (begin / width) * stride + slot.column;
        for (std::int64_t row = 0; row < n / width; ++row)
          for (std::int64_t i = 0; i < width; ++i) row0[row * stride + i] += g[row * width + i];
      } else if (size == total) {
        std::copy_n(g, n, d + begin);
      } else {  // a broadcast input sums its repeats (n is whole periods)
        for (std::int64_t row = 0; row < n; row += size)
          for (std::int64_t i = 0; i < size; ++i) d[i] += g[row + i];
      }
    }
  });
  return grads;
}

struct ElementwiseChain {
  static constexpr std::string_view name = "scan_elementwise_chain";
  std::shared_ptr<const ChainProgram> program;
  // From the last forward with gradients on, what backward reads: the values that stay
  // inside the chain ([instructions, elements], a row each) and the outputs. And the
  // outputs after the first, for more_outputs().
  mutable Tensor inner;
  mutable std::vector<Tensor> outputs, more;

  ElementwiseChain fresh_copy() const { return {program, {}, {}, {}}; }

  // Where instruction k's values are: its output's buffer, or its row of `inner`.
  template <class T>
  std::vector<T*> value_rows() const {
    const ChainProgram& p = *program;
    std::vector<T*> rows(p.code.size(), nullptr);
    for (std::size_t o = 0; o < p.outputs.size(); ++o) rows[p.outputs[o]] = outputs[o].template data<T>();
    std::int64_t row = 0;
    for (std::size_t k = 0; k < rows.size(); ++k)
      if (!rows[k]) rows[k] = inner.template data<T>() + row++ * numel(p.shape);
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
  Grads<Tensor> saved_tensors() const {
    Grads<Tensor> held(outputs.begin(), outputs.end());
    if (inner.defined()) held.push_back(inner);
    return held;
  }
  void drop_saved() const {
    inner = Tensor();
    outputs.clear();
  }

  // With gradients on, every value is written where backward will read it (the outputs in
  // their own buffers, so that a kept output does not hold the others); without, a block's
  // values stay in scratch and only the outputs are written.
  Tensor forward(std::span<const Tensor> inputs) const {
    const ChainProgram& p = *program;
    const std::int64_t total = numel(p.shape);
    const auto n_code = static_cast<std::int64_t>(p.code.size());
    std::vector<Tensor> outs;
    dispatch_floating(name, inputs[0].dtype(), [&]<class T>() {
      ChainBlocks<T> blocks(p, inputs);
      for (std::size_t o = 0; o < p.outputs.size(); ++o) outs.push_back(Tensor::empty(p.shape, inputs[0].dtype()));
      if (grad_enabled()) {
        outputs = outs;
        const std::int64_t n_inner = n_code - static_cast<std::int64_t>(p.outputs.size());
        inner = n_inner > 0 ? Tensor::empty({n_inner, total}, inputs[0].dtype()) : Tensor();
        const std::vector<T*> rows = value_rows<T>();
        blocks.each_block([&](std::int64_t begin, std::int64_t n) {
          blocks.run(begin, n, [&](std::size_t k) { return rows[k] + begin; });
        });
        return;
      }
      drop_saved();
      T* const values = scratch<T>(0, p.code.size() * static_cast<std::size_t>(blocks.block()));
      auto value = [&](std::size_t k) { return values + static_cast<std::int64_t>(k) * blocks.block(); };
      blocks.each_block([&](std::int64_t begin, std::int64_t n) {
        blocks.run(begin, n, value);
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
          std::copy_n(value(p.outputs[o]), n, outs[o].template data<T>() + begin);
      });
    });
    more.assign(outs.begin() + 1, outs.end());
    return outs[0];
  }
  std::vector<Tensor> more_outputs() const { return std::move(more); }

  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      std::vector<Tensor> inputs, grads{a.grad};
      for (std::size_t j = 0; j < a.inputs.size(); ++j) inputs.push_back(a.inputs[j]);
      for (std::size_t o = 1; o < program->outputs.size(); ++o)
        grads.push_back(o - 1 < a.more_grads.size() ? a.more_grads[o - 1] : Tensor());
      if (outputs.empty()) {  // recorded without gradients, or released: make the values now
        EnableGrad on;
        forward(inputs);
      }
      return dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        const std::vector<T*> rows = value_rows<T>();
        return chain_backward<T>(*program, inputs, std::vector<const T*>(rows.begin(), rows.end()), grads, a.needs);
      });
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

recur::detail::OpBox elementwise_chain_op(std::shared_ptr<const ChainProgram> program) {
  return recur::detail::OpBox::make<recur::detail::kListArity>(ElementwiseChain{std::move(program), {}, {}, {}});
}

}  // namespace recur::scan_engine::detail
