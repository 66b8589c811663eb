// A fused chain of elementwise ops (elementwise_chain_detail.hpp).
#include <recur/ops/scan/elementwise_chain_detail.hpp>

#include <algorithm>
#include <cmath>
#include <string>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
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
    period_ = 1;
    for (const Tensor& in : inputs)
      if (in.numel() != total_) period_ = std::max(period_, in.numel());
    block_ = block_size(total_, period_);
    // A broadcast input reads the same in every block (blocks start at whole periods).
    repeated_.resize(inputs.size());
    for (std::size_t j = 0; j < inputs.size(); ++j) {
      const std::int64_t n = inputs[j].numel();
      if (n == total_) continue;
      const T* x = inputs[j].data<T>();
      repeated_[j].resize(static_cast<std::size_t>(block_));
      for (std::int64_t i = 0; i < block_; ++i) repeated_[j][i] = x[i % n];
    }
  }
  std::int64_t total() const { return total_; }
  std::int64_t block() const { return block_; }

  // An operand's elements [begin, begin + n); `values(k)` gives instruction k's.
  template <class Values>
  const T* operand(const ChainOperand& o, std::int64_t begin, Values&& values) const {
    if (!o.is_input) return values(o.index);
    const Tensor& in = inputs_[o.index];
    return in.numel() == total_ ? in.data<T>() + begin : repeated_[o.index].data();
  }

  // Every instruction's value over elements [begin, begin + n), into values(k).
  template <class Values>
  void run(std::int64_t begin, std::int64_t n, Values&& values) const {
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
  std::int64_t total_ = 0, period_ = 1, block_ = 1;
  std::vector<std::vector<T>> repeated_;
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
  const ChainBlocks<T> blocks(p, inputs);
  const std::int64_t block = blocks.block(), total = blocks.total();
  const std::size_t n_code = p.code.size(), n_in = inputs.size();
  Grads<Tensor> grads(n_in);
  for (std::size_t j = 0; j < n_in; ++j)
    if (needs[j])
      grads[j] = inputs[j].numel() == total ? Tensor::empty(inputs[j].shape(), inputs[j].dtype())
                                            : zeros(inputs[j].shape(), inputs[j].dtype());
  T* const regs = scratch<T>(1, (n_code + n_in) * static_cast<std::size_t>(block));
  std::vector<std::uint8_t> written(n_code + n_in);
  for (std::int64_t begin = 0; begin < total; begin += block) {
    const std::int64_t n = std::min(block, total - begin);
    auto value = [&](std::size_t k) { return values[k] + begin; };
    std::fill(written.begin(), written.end(), 0);
    // Register r: value r's gradient (r < n_code), or input r - n_code's.
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
        if (o.is_input && !needs[o.index]) return;
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
    for (std::size_t j = 0; j < n_in; ++j) {  // the inputs' gradients of this block
      if (!needs[j]) continue;
      const T* g = reg(n_code + j);
      T* d = grads[j].data<T>();
      const std::int64_t size = inputs[j].numel();
      if (size == total) {
        if (written[n_code + j]) std::copy_n(g, n, d + begin);
        else std::fill_n(d + begin, n, T(0));
      } else if (written[n_code + j]) {  // a broadcast input sums its repeats (n is whole periods)
        for (std::int64_t row = 0; row < n; row += size)
          for (std::int64_t i = 0; i < size; ++i) d[i] += g[row + i];
      }
    }
  }
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
      const ChainBlocks<T> blocks(p, inputs);
      for (std::size_t o = 0; o < p.outputs.size(); ++o) outs.push_back(Tensor::empty(p.shape, inputs[0].dtype()));
      if (grad_enabled()) {
        outputs = outs;
        const std::int64_t n_inner = n_code - static_cast<std::int64_t>(p.outputs.size());
        inner = n_inner > 0 ? Tensor::empty({n_inner, total}, inputs[0].dtype()) : Tensor();
        const std::vector<T*> rows = value_rows<T>();
        for (std::int64_t begin = 0; begin < total; begin += blocks.block())
          blocks.run(begin, std::min(blocks.block(), total - begin), [&](std::size_t k) { return rows[k] + begin; });
        more.assign(outs.begin() + 1, outs.end());
        return;
      }
      drop_saved();
      T* const values = scratch<T>(0, p.code.size() * static_cast<std::size_t>(blocks.block()));
      for (std::int64_t begin = 0; begin < total; begin += blocks.block()) {
        const std::int64_t n = std::min(blocks.block(), total - begin);
        auto value = [&](std::size_t k) { return values + static_cast<std::int64_t>(k) * blocks.block(); };
        blocks.run(begin, n, value);
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
          std::copy_n(value(p.outputs[o]), n, outs[o].template data<T>() + begin);
      }
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
    auto operand = [&](const ChainOperand& o) { return o.is_input ? a.inputs[o.index] : values[o.index]; };
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
    Grads<Var> result(a.inputs.size());
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
        if (operands[i].is_input) accumulate(result[operands[i].index], gs[i]);
        else accumulate(g[operands[i].index], gs[i]);
      }
    }
    return result;
  }
};

}  // namespace

recur::detail::OpBox elementwise_chain_op(std::shared_ptr<const ChainProgram> program) {
  return recur::detail::OpBox::make<recur::detail::kListArity>(ElementwiseChain{std::move(program), {}, {}, {}});
}

}  // namespace recur::scan_engine::detail
