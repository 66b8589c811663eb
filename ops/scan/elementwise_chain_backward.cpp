// The elementwise chain's backward on values (elementwise_chain_backward_detail.hpp).
#include <recur/ops/scan/elementwise_chain_backward_detail.hpp>

#include <algorithm>

#include <recur/core/creation.hpp>
#include <recur/ops/scan/elementwise_chain_blocks_detail.hpp>

namespace recur::scan_engine::detail::chain {
namespace {

// A one-operand instruction's rule (ChainGrad) and the values it reads.
template <class T>
struct OwnRule {
  recur::detail::ChainGrad rule;
  Run<const T> reads;
};

}  // namespace

// The chain's backward on values: its rules per element, block by block, reading the
// values forward kept (values[k]: instruction k's, every element). Gradient registers per
// value and per input live in scratch, a set per tile (ChainBlocks::each_block_in_tiles); an
// input's gradient is written once per block. A broadcast input's gradient sums every
// block's rows: each block sums its own into a partial of its own, and the partials are added
// in block order after the last, so the bits do not depend on which thread ran which block.
template <class T>
Grads<Tensor> backward(const ChainProgram& p, const InputList<Tensor>& inputs, std::span<const T* const> values,
                       const InputList<Tensor>& out_grads, std::span<const std::uint8_t> needs) {
  using Rule = recur::detail::ChainGrad;
  const std::shared_ptr<const ChainLayout> layout = layout_of(p, inputs);
  ChainBlocks<T> blocks(p, *layout, inputs, &p.slots_read);
  const std::int64_t block = blocks.block(), total = blocks.total(), width = blocks.width();
  const std::size_t n_code = p.code.size(), n_slots = p.slots.size();
  Grads<Tensor> grads(inputs.size());
  const auto& writes = layout->writes;
  for (std::size_t in = 0; in < inputs.size(); ++in)
    if (needs[in])
      grads[in] = writes[in] == Writes::sum ? zeros(inputs[in].shape(), inputs[in].dtype())
                                            : Tensor::empty(inputs[in].shape(), inputs[in].dtype());
  // Per input whose slots sum rows of several blocks into the same elements (a broadcast
  // input, a row of columns read again in every row), its partials: one of its size per
  // block, zeroed (ChainLayout::partial_at).
  const std::int64_t n_blocks = blocks.blocks();
  const auto& partial_at = layout->partial_at;
  const std::int64_t partial_size = layout->partial_size;
  // (In a thread's scratch, as the registers: a chain's backward runs at every step.)
  T* const partial_sums = scratch<T>(3, static_cast<std::size_t>(partial_size * n_blocks));
  std::fill_n(partial_sums, partial_size * n_blocks, T(0));
  const std::int64_t tiles = blocks.tiles();
  const std::size_t regs_per_tile = (n_code + n_slots) * static_cast<std::size_t>(block);
  const std::size_t remade_per_tile = p.recomputed.size() * static_cast<std::size_t>(block);
  T* const regs_all = scratch<T>(1, static_cast<std::size_t>(tiles) * regs_per_tile);
  // The values made again for each block (ChainProgram::recomputed), in the forward's scratch.
  T* const remade_all = scratch<T>(0, static_cast<std::size_t>(tiles) * remade_per_tile);
  const auto& kernels = nn::detail::kernels<T>();
  boost::container::small_vector<std::int32_t, 32> remade_row(n_code, -1);
  for (std::size_t r = 0; r < p.recomputed.size(); ++r) remade_row[p.recomputed[r]] = static_cast<std::int32_t>(r);
  // Per tile: which registers a block wrote, and the slots' registers (made here: a tile may
  // run on a helper, which must not allocate).
  boost::container::small_vector<Flags, 4> written_of(static_cast<std::size_t>(tiles), Flags(n_code + n_slots, 0));
  boost::container::small_vector<boost::container::small_vector<Run<T>, 32>, 4> slot_reg_of(
      static_cast<std::size_t>(tiles), boost::container::small_vector<Run<T>, 32>(n_slots));
  // Per slot: its input's gradient where the slot alone writes its elements (whole, or its
  // columns of every row), written in place: the first row's elements and the row stride.
  // nullptr where slots sum their shares (a register of scratch, added after each block).
  boost::container::small_vector<Run<T>, 32> in_place(n_slots);
  for (std::size_t j = 0; j < n_slots; ++j) {
    const ChainSlot& slot = p.slots[j];
    if (!needs[slot.input] || writes[slot.input] == Writes::sum) continue;
    T* d = grads[slot.input].data<T>();
    if (writes[slot.input] == Writes::whole) in_place[j] = {d};
    else in_place[j] = {d + slot.column, inputs[slot.input].shape().back()};
  }
  // Registers that read another's gradient instead of copying it (ChainProgram::gradient_copy_of):
  // a slot only where its input's gradient is summed over slots (one written in place is
  // that gradient); an output no instruction reads takes the caller's gradient as it is.
  auto lives = [&](std::size_t r) -> std::size_t {
    const std::int32_t of = p.gradient_copy_of[r];
    if (of < 0) return r;
    if (r >= n_code) {
      const std::uint16_t in = p.slots[r - n_code].input;
      if (!needs[in] || writes[in] != Writes::sum) return r;
    }
    return static_cast<std::size_t>(of);
  };
  boost::container::small_vector<T*, 32> given(n_code, nullptr);
  for (std::size_t o = 0; o < p.outputs.size(); ++o)
    if (out_grads[o].defined() && p.output_not_operand[o])
      given[p.outputs[o]] = const_cast<T*>(out_grads[o].data<T>());  // only read
  blocks.each_block_in_tiles(tiles, [&](std::int64_t tile, std::int64_t index, std::int64_t begin, std::int64_t n) {
    T* const regs = regs_all + static_cast<std::size_t>(tile) * regs_per_tile;
    T* const remade = remade_all + static_cast<std::size_t>(tile) * remade_per_tile;
    Flags& written = written_of[static_cast<std::size_t>(tile)];
    auto& slot_reg = slot_reg_of[static_cast<std::size_t>(tile)];
    auto value = [&](std::size_t k) -> const T* {
      if (values[k]) return values[k] + begin;
      return remade_row[k] < 0 ? nullptr : remade + remade_row[k] * block;
    };
    // Instruction k's own rule when it has one operand (in = p.code[k]): d(-x) = -g,
    // d tanh x = g (1 - y^2), d sigmoid x = g y (1 - y), d e^x = g y, d relu x = x > 0 ? g : 0.
    auto own_rule = [&](const ChainInstruction& in, std::size_t k) -> OwnRule<T> {
      const Run<const T> y{value(k)};
      switch (in.code) {
        case ChainCode::neg: return {Rule::negate, {}};
        case ChainCode::tanh: return {Rule::tanh, y};
        case ChainCode::sigmoid: return {Rule::sigmoid, y};
        case ChainCode::exp: return {Rule::times, y};
        default: return {Rule::relu, blocks.operand(in.a, begin, value)};  // relu
      }
    };
    for (std::size_t k : p.recomputed) blocks.run_instruction(k, begin, n, value, remade + remade_row[k] * block);
    std::fill(written.begin(), written.end(), 0);
    // Register r: value r's gradient (r < n_code), or slot r - n_code's: this block's
    // elements of its input's gradient where it writes them in place.
    for (std::size_t j = 0; j < n_slots; ++j) {
      const Run<T>& d = in_place[j];
      if (!d.p) slot_reg[j] = {regs + (n_code + j) * block};
      else if (!d.stride) slot_reg[j] = {d.p + begin};
      else slot_reg[j] = {d.p + (begin / width) * d.stride, n == width ? 0 : d.stride};
    }
    auto reg = [&](std::size_t r) {
      r = lives(r);
      if (r >= n_code) return slot_reg[r - n_code];
      return given[r] ? Run<T>{given[r] + begin} : Run<T>{regs + r * block};
    };
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (out_grads[o].defined()) {
        const std::size_t r = p.outputs[o];
        if (!given[r])
          kernels.chain_grad_row(Rule::copy, written[r], out_grads[o].data<T>() + begin, nullptr, nullptr, reg(r).p, n);
        written[r] = 1;
      }
    for (std::size_t k = n_code; k-- > 0;) {
      if (!written[k]) continue;  // no gradient reached this value
      const ChainInstruction& in = p.code[k];
      const T* gy = reg(k).p;
      const Run<const T> y{value(k)};
      const Run<const T> a = blocks.operand(in.a, begin, value);
      const Run<const T> b = unary(in.code) ? Run<const T>{} : blocks.operand(in.b, begin, value);
      // Adds operand o's share of gy by `rule` (reading u and v) into its register, when it
      // wants a gradient. A folded operand (ChainProgram::folded) hands that share on by its
      // own rule at once, into its own operand's register.
      auto add = [&](const ChainOperand& o, Rule rule, Run<const T> u = {}, Run<const T> v = {}) {
        if (!o.is_input && p.folded[o.index]) {
          const ChainInstruction& f = p.code[o.index];
          if (f.a.is_input && !needs[p.slots[f.a.index].input]) return;
          const std::size_t r = register_of(f.a, n_code);
          const OwnRule<T> then = own_rule(f, o.index);
          const Run<T> into = reg(r);
          blocks.each_run(n, {u.stride, v.stride, then.reads.stride, into.stride}, [&](std::int64_t row, std::int64_t len) {
            kernels.chain_grad_then_row(rule, then.rule, written[r], gy + row * width, blocks.at(u, row),
                                        blocks.at(v, row), blocks.at(then.reads, row), blocks.at(into, row), len);
          });
          written[r] = 1;
          return;
        }
        if (o.is_input && !needs[p.slots[o.index].input]) return;
        const std::size_t r = register_of(o, n_code);
        if (lives(r) != r) {  // its one share is gy itself, read where it is
          written[r] = 1;
          return;
        }
        const Run<T> into = reg(r);
        blocks.each_run(n, {u.stride, v.stride, into.stride}, [&](std::int64_t row, std::int64_t len) {
          kernels.chain_grad_row(rule, written[r], gy + row * width, blocks.at(u, row), blocks.at(v, row),
                                 blocks.at(into, row), len);
        });
        written[r] = 1;
      };
      switch (in.code) {
        case ChainCode::add:
          add(in.a, Rule::copy);
          add(in.b, Rule::copy);
          break;
        case ChainCode::sub:
          add(in.a, Rule::copy);
          add(in.b, Rule::negate);
          break;
        case ChainCode::mul:
          add(in.a, Rule::times, b);
          add(in.b, Rule::times, a);
          break;
        case ChainCode::div:  // d(a/b) = g/b, -g y/b
          add(in.a, Rule::divide, b);
          add(in.b, Rule::divisor, y, b);
          break;
        default: {  // one operand
          const OwnRule<T> own = own_rule(in, k);
          add(in.a, own.rule, own.reads);
        }
      }
    }
    for (std::size_t j = 0; j < n_slots; ++j) {  // the slots' gradients of this block, into their inputs'
      const ChainSlot& slot = p.slots[j];
      if (!needs[slot.input]) continue;
      T* d = grads[slot.input].data<T>();
      const Tensor& in = inputs[slot.input];
      const std::int64_t size = in.numel();
      const std::int64_t stride = slot.column < 0 || one_row(in, total, width) ? 0 : in.shape().back();
      const Writes how = writes[slot.input];
      if (!written[n_code + j]) {  // no gradient reached the slot: zeros where only it writes
        T* const row0 = slot.column >= 0 ? d + (begin / width) * stride + slot.column : d;
        if (how == Writes::whole) std::fill_n(d + begin, n, T(0));
        if (how == Writes::tiled)
          for (std::int64_t row = 0; row < n / width; ++row) std::fill_n(row0 + row * stride, width, T(0));
        continue;
      }
      if (how != Writes::sum) continue;  // written in place
      const T* g = reg(n_code + j).p;
      // Rows read again in every block add into this block's partial, the rest into d.
      if (partial_at[slot.input] >= 0) d = partial_sums + index * partial_size + partial_at[slot.input];
      T* const row0 = slot.column >= 0 ? d + (begin / width) * stride + slot.column : d;
      if (slot.column >= 0) {  // its columns of each row (of its one row, summed over the chain's)
        for (std::int64_t row = 0; row < n / width; ++row)
          for (std::int64_t i = 0; i < width; ++i) row0[row * stride + i] += g[row * width + i];
      } else if (size == total) {  // whole, beside other slots of the same input
        for (std::int64_t i = 0; i < n; ++i) d[begin + i] += g[i];
      } else {  // a broadcast input sums its repeats (n is whole periods)
        for (std::int64_t row = 0; row < n; row += size)
          for (std::int64_t i = 0; i < size; ++i) d[i] += g[row + i];
      }
    }
  });
  for (std::size_t in = 0; in < inputs.size(); ++in) {  // the partials, block by block
    if (partial_at[in] < 0 || !needs[in]) continue;
    T* const d = grads[in].data<T>();
    const std::int64_t size = inputs[in].numel();
    for (std::int64_t b = 0; b < n_blocks; ++b) {
      const T* part = partial_sums + b * partial_size + partial_at[in];
      for (std::int64_t i = 0; i < size; ++i) d[i] += part[i];
    }
  }
  return grads;
}

template Grads<Tensor> backward<float>(const ChainProgram&, const InputList<Tensor>&, std::span<const float* const>,
                                       const InputList<Tensor>&, std::span<const std::uint8_t>);
template Grads<Tensor> backward<double>(const ChainProgram&, const InputList<Tensor>&, std::span<const double* const>,
                                        const InputList<Tensor>&, std::span<const std::uint8_t>);

}  // namespace recur::scan_engine::detail::chain
