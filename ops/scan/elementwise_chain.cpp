// A fused chain of elementwise ops (elementwise_chain_detail.hpp).
#include <recur/ops/scan/elementwise_chain_detail.hpp>

#include <algorithm>
#include <cmath>
#include <string>

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

// Elements per block: whole periods of the broadcast inputs, about 2048 elements.
std::int64_t block_size(std::int64_t total, std::int64_t period) {
  return std::min(total, period * std::max<std::int64_t>(1, 2048 / period));
}

// The values of a chain over one block of elements at a time.
template <class T>
class ChainBlocks {
 public:
  ChainBlocks(const ChainProgram& p, std::span<const Tensor> inputs) : p_(p), inputs_(inputs) {
    total_ = numel(p.shape);
    period_ = 1;
    for (const Tensor& in : inputs)
      if (in.numel() != total_) period_ = std::max(period_, in.numel());
    block_ = block_size(total_, period_);
    values_.resize(p.code.size() * static_cast<std::size_t>(block_));
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
  std::int64_t period() const { return period_; }

  const T* operand(const ChainOperand& o, std::int64_t begin) const {
    if (!o.is_input) return value(o.index);
    const Tensor& in = inputs_[o.index];
    return in.numel() == total_ ? in.data<T>() + begin : repeated_[o.index].data();
  }
  T* value(std::size_t k) { return values_.data() + k * block_; }
  const T* value(std::size_t k) const { return values_.data() + k * block_; }

  // Every instruction's value over elements [begin, begin + n).
  void run(std::int64_t begin, std::int64_t n) {
    for (std::size_t k = 0; k < p_.code.size(); ++k) {
      const ChainInstruction& in = p_.code[k];
      const T* a = operand(in.a, begin);
      const T* b = unary(in.code) ? nullptr : operand(in.b, begin);
      T* y = value(k);
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
  std::vector<T> values_;
  std::vector<std::vector<T>> repeated_;
};

// The chain's backward on values: its rules per element, block by block, with the block's
// values recomputed from the inputs.
template <class T>
Grads<Tensor> chain_backward(const ChainProgram& p, std::span<const Tensor> inputs, std::span<const Tensor> out_grads,
                             std::span<const std::uint8_t> needs) {
  ChainBlocks<T> blocks(p, inputs);
  const std::int64_t block = blocks.block(), total = blocks.total();
  Grads<Tensor> grads(inputs.size());
  for (std::size_t j = 0; j < inputs.size(); ++j)
    if (needs[j]) grads[j] = zeros(inputs[j].shape(), inputs[j].dtype());
  std::vector<T> g(p.code.size() * static_cast<std::size_t>(block));
  for (std::int64_t begin = 0; begin < total; begin += block) {
    const std::int64_t n = std::min(block, total - begin);
    blocks.run(begin, n);
    std::fill(g.begin(), g.end(), T(0));
    auto grad_of = [&](std::size_t k) { return g.data() + k * block; };
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (out_grads[o].defined()) {
        const T* src = out_grads[o].data<T>() + begin;
        T* dst = grad_of(p.outputs[o]);
        for (std::int64_t i = 0; i < n; ++i) dst[i] += src[i];
      }
    for (std::size_t k = p.code.size(); k-- > 0;) {
      const ChainInstruction& in = p.code[k];
      const T* gy = grad_of(k);
      const T* y = blocks.value(k);
      const T* a = blocks.operand(in.a, begin);
      const T* b = unary(in.code) ? nullptr : blocks.operand(in.b, begin);
      // Adds c(i) into the gradient of operand `o`: an earlier value, or input o.index
      // (a broadcast input sums over its repeats; blocks start at whole periods).
      auto add = [&](const ChainOperand& o, auto&& c) {
        if (!o.is_input) {
          T* d = grad_of(o.index);
          for (std::int64_t i = 0; i < n; ++i) d[i] += c(i);
        } else if (needs[o.index]) {
          T* d = grads[o.index].data<T>();
          const std::int64_t size = inputs[o.index].numel();
          if (size == total) {
            for (std::int64_t i = 0; i < n; ++i) d[begin + i] += c(i);
          } else {
            for (std::int64_t i = 0; i < n; ++i) d[i % size] += c(i);
          }
        }
      };
      switch (in.code) {
        case ChainCode::add: add(in.a, [&](auto i) { return gy[i]; }); add(in.b, [&](auto i) { return gy[i]; }); break;
        case ChainCode::sub: add(in.a, [&](auto i) { return gy[i]; }); add(in.b, [&](auto i) { return -gy[i]; }); break;
        case ChainCode::mul:
          add(in.a, [&](auto i) { return gy[i] * b[i]; });
          add(in.b, [&](auto i) { return gy[i] * a[i]; });
          break;
        case ChainCode::div:  // d(a/b) = g/b, -g y/b
          add(in.a, [&](auto i) { return gy[i] / b[i]; });
          add(in.b, [&](auto i) { return -(gy[i] * y[i] / b[i]); });
          break;
        case ChainCode::neg: add(in.a, [&](auto i) { return -gy[i]; }); break;
        case ChainCode::tanh: add(in.a, [&](auto i) { return gy[i] * (T(1) - y[i] * y[i]); }); break;
        case ChainCode::sigmoid: add(in.a, [&](auto i) { return gy[i] * y[i] * (T(1) - y[i]); }); break;
        case ChainCode::exp: add(in.a, [&](auto i) { return gy[i] * y[i]; }); break;
        case ChainCode::relu: add(in.a, [&](auto i) { return a[i] > 0 ? gy[i] : T(0); }); break;
      }
    }
  }
  return grads;
}

struct ElementwiseChain {
  static constexpr std::string_view name = "scan_elementwise_chain";
  std::shared_ptr<const ChainProgram> program;
  mutable std::vector<Tensor> more;  // outputs after the first, from the last forward

  OpAttributes attributes() const {
    std::string ops;
    for (const auto& op : program->ops) {
      if (!ops.empty()) ops.push_back(' ');
      ops.append(op.name());
    }
    return {{"ops", ops}, {"outputs", ints_attribute(program->outputs)}};
  }

  Tensor forward(std::span<const Tensor> inputs) const {
    const ChainProgram& p = *program;
    std::vector<Tensor> outs;
    for (std::size_t o = 0; o < p.outputs.size(); ++o) outs.push_back(Tensor::empty(p.shape, inputs[0].dtype()));
    dispatch_floating(name, inputs[0].dtype(), [&]<class T>() {
      ChainBlocks<T> blocks(p, inputs);
      for (std::int64_t begin = 0; begin < blocks.total(); begin += blocks.block()) {
        const std::int64_t n = std::min(blocks.block(), blocks.total() - begin);
        blocks.run(begin, n);
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
          std::copy_n(blocks.value(p.outputs[o]), n, outs[o].template data<T>() + begin);
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
      return dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        return chain_backward<T>(*program, inputs, grads, a.needs);
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
  return recur::detail::OpBox::make<recur::detail::kListArity>(ElementwiseChain{std::move(program), {}});
}

}  // namespace recur::scan_engine::detail
