// The elementwise chain's backward on values (elementwise_chain_backward_detail.hpp).
#include <recur/ops/scan/elementwise_chain_backward_detail.hpp>

#include <algorithm>

#include <recur/core/creation.hpp>
#include <recur/ops/scan/elementwise_chain_blocks_detail.hpp>
#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>
#include <recur/ops/scan/elementwise_chain_passes_detail.hpp>
#include <recur/ops/scan/elementwise_chain_raw_detail.hpp>

namespace recur::scan_engine::detail::chain {
namespace {

// The backward of a chain whose elements fit one block, by its compiled calls (made once per
// set of passes and kept in the layout): the interpreter's below, over the one block.
template <class T>
void run_compiled(const ChainProgram& p, const ChainLayout& layout, const ChainPasses& plan,
                  const InputList<Tensor>& inputs, std::span<const T* const> values, const InputList<Tensor>& out_grads,
                  Grads<Tensor>& grads) {
  std::shared_ptr<const CompiledBackward> held;
  const CompiledBackward& f = compiled_backward(p, layout, plan, held);
  boost::container::small_vector<const T*, 8> in(inputs.size()), given(out_grads.size());
  boost::container::small_vector<T*, 8> into(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    in[i] = inputs[i].defined() ? inputs[i].data<T>() : nullptr;  // else unread: dropped
    into[i] = grads[i].defined() ? grads[i].data<T>() : nullptr;
  }
  for (std::size_t o = 0; o < out_grads.size(); ++o)
    given[o] = out_grads[o].defined() ? out_grads[o].data<T>() : nullptr;
  run_backward<T>(p, layout, f, std::span<const T* const>(in.data(), in.size()), values,
                  std::span<const T* const>(given.data(), given.size()), std::span<T* const>(into.data(), into.size()));
}

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
  std::shared_ptr<const ChainLayout> layout_held;
  const ChainLayout& layout = layout_of(p, inputs, layout_held);
  const std::size_t n_code = p.code.size(), n_slots = p.slots.size(), n_regs = n_code + n_slots;
  Grads<Tensor> grads(inputs.size());
  const auto& writes = layout.writes;
  for (std::size_t in = 0; in < inputs.size(); ++in)
    if (needs[in])
      grads[in] = writes[in] == Writes::sum ? zeros(inputs[in].shape(), inputs[in].dtype())
                                            : Tensor::empty(inputs[in].shape(), inputs[in].dtype());
  // Per input whose slots sum rows of several blocks into the same elements (a broadcast
  // input, a row of columns read again in every row), its partials: one of its size per
  // block, zeroed (ChainLayout::partial_at).
  const std::int64_t n_blocks = layout.block > 0 ? (layout.total + layout.block - 1) / layout.block : 0;
  const auto& partial_at = layout.partial_at;
  const std::int64_t partial_size = layout.partial_size;
  // What each block's passes are (elementwise_chain_passes_detail.hpp).
  Flags defined(p.outputs.size(), 0);
  for (std::size_t o = 0; o < p.outputs.size(); ++o) defined[o] = out_grads[o].defined();
  std::shared_ptr<const ChainPasses> plan_held;
  const ChainPasses& plan = passes_of(p, layout, needs, defined, plan_held);
  if (layout.forward_calls && compiled_chains()) {
    run_compiled<T>(p, layout, plan, inputs, values, out_grads, grads);
    return grads;
  }
  // (In a thread's scratch, as the registers: a chain's backward runs at every step.)
  T* const partial_sums =
      partial_size > 0 ? scratch<T>(3, static_cast<std::size_t>(partial_size * n_blocks)) : nullptr;
  if (partial_sums) std::fill_n(partial_sums, partial_size * n_blocks, T(0));
  const ChainBlocks<T> blocks(p, layout, inputs, /*backward=*/true);
  const std::int64_t block = blocks.block(), total = blocks.total(), width = blocks.width();
  const std::int64_t tiles = blocks.tiles();
  const std::size_t regs_per_tile = n_regs * static_cast<std::size_t>(block);
  const std::size_t remade_per_tile = p.recomputed.size() * static_cast<std::size_t>(block);
  T* const regs_all = scratch<T>(1, static_cast<std::size_t>(tiles) * regs_per_tile);
  // The values made again for each block (ChainProgram::recomputed), in the forward's scratch.
  T* const remade_all =
      remade_per_tile > 0 ? scratch<T>(0, static_cast<std::size_t>(tiles) * remade_per_tile) : nullptr;
  // Per register, where a block finds it, worked out once per call: r < n_code, value r's
  // gradient (an output's gradient as given, only read; else in a tile's scratch); else slot
  // r - n_code's, this block's elements of its input's gradient where the slot alone writes
  // them (whole, or its columns of every row: written in place), else in a tile's scratch.
  struct RegisterAt {
    T* p = nullptr;            // given / in place: the first element; nullptr: in a tile's scratch
    std::int64_t offset = 0;   // in a tile's scratch: where
    std::int64_t stride = 0;   // in place by columns: the input's row length
  };
  boost::container::small_vector<RegisterAt, 48> reg_at(n_regs);
  for (std::size_t r = 0; r < n_code; ++r) {
    const std::int32_t o = plan.given[r];
    if (o >= 0) reg_at[r] = {const_cast<T*>(out_grads[o].data<T>())};
    else reg_at[r] = {nullptr, static_cast<std::int64_t>(r) * block};
  }
  for (std::size_t j = 0; j < n_slots; ++j) {
    const ChainSlot& slot = p.slots[j];
    const std::size_t r = n_code + j;
    if (!needs[slot.input] || writes[slot.input] == Writes::sum) {
      reg_at[r] = {nullptr, static_cast<std::int64_t>(r) * block};
      continue;
    }
    T* d = grads[slot.input].data<T>();
    if (writes[slot.input] == Writes::whole) reg_at[r] = {d};
    else reg_at[r] = {d + slot.column, 0, inputs[slot.input].shape().back()};
  }
  // Per instruction: where its value is (given, or made again in a tile's scratch: `remade`
  // its row there; -1 neither).
  boost::container::small_vector<std::int32_t, 32> remade_row(n_code, -1);
  for (std::size_t r = 0; r < p.recomputed.size(); ++r) remade_row[p.recomputed[r]] = static_cast<std::int32_t>(r);
  // Per tile, per block: the registers' runs (a tile may run on a helper, which must not allocate).
  boost::container::small_vector<Run<T>, 96> reg_runs(static_cast<std::size_t>(tiles) * n_regs);
  boost::container::small_vector<const T*, 64> value_ptrs(static_cast<std::size_t>(tiles) * n_code);
  const auto& kernels = blocks.kernels();
  blocks.each_block_in_tiles(tiles, [&](std::int64_t tile, std::int64_t index, std::int64_t begin, std::int64_t n) {
    T* const regs = regs_all + static_cast<std::size_t>(tile) * regs_per_tile;
    T* const remade = remade_all ? remade_all + static_cast<std::size_t>(tile) * remade_per_tile : nullptr;
    Run<T>* const reg = reg_runs.data() + static_cast<std::size_t>(tile) * n_regs;
    const T** const value = value_ptrs.data() + static_cast<std::size_t>(tile) * n_code;
    for (std::size_t k = 0; k < n_code; ++k)
      value[k] = values[k] ? values[k] + begin : remade_row[k] < 0 ? nullptr : remade + remade_row[k] * block;
    auto value_of = [&](std::size_t k) { return value[k]; };
    for (std::size_t k : p.recomputed) blocks.run_instruction(k, begin, n, value_of, remade + remade_row[k] * block);
    for (std::size_t r = 0; r < n_regs; ++r) {
      const RegisterAt& at = reg_at[r];
      if (!at.p) reg[r] = {regs + at.offset};
      else if (!at.stride) reg[r] = {at.p + begin};
      else reg[r] = {at.p + (begin / width) * at.stride, n == width ? 0 : at.stride};
    }
    auto source = [&](const PassSource& s) -> Run<const T> {
      if (s.kind == PassSource::Kind::value) return {value[s.operand.index]};
      if (s.kind == PassSource::Kind::operand) return blocks.operand(s.operand, begin, value_of);
      return {};
    };
    for (const ChainPass& pass : plan.passes) {
      const Run<T> into = reg[pass.into];
      if (pass.from_output) {
        kernels.chain_grad_row(Rule::copy, pass.accumulate, out_grads[pass.gradient].data<T>() + begin, nullptr, nullptr,
                               into.p, n);
        continue;
      }
      const T* gy = reg[pass.gradient].p;
      const Run<const T> u = source(pass.u), v = source(pass.v);
      if (pass.folded) {
        const Run<const T> w = source(pass.w);
        const bool strided = (u.stride | v.stride | w.stride | into.stride) != 0;
        blocks.each_run(n, strided, [&](std::int64_t row, std::int64_t len) {
          kernels.chain_grad_then_row(pass.rule, pass.then, pass.accumulate, gy + row * width, blocks.at(u, row),
                                      blocks.at(v, row), blocks.at(w, row), blocks.at(into, row), len);
        });
      } else {
        blocks.each_run(n, (u.stride | v.stride | into.stride) != 0, [&](std::int64_t row, std::int64_t len) {
          kernels.chain_grad_row(pass.rule, pass.accumulate, gy + row * width, blocks.at(u, row), blocks.at(v, row),
                                 blocks.at(into, row), len);
        });
      }
    }
    for (std::size_t j = 0; j < n_slots; ++j) {  // the slots' gradients of this block, into their inputs'
      const ChainSlot& slot = p.slots[j];
      if (!needs[slot.input]) continue;
      const Writes how = writes[slot.input];
      if (how != Writes::sum && plan.slot_written[j]) continue;  // written in place
      T* d = grads[slot.input].data<T>();
      const std::int64_t stride = layout.row_stride[j];
      if (!plan.slot_written[j]) {  // no gradient reached the slot: zeros where only it writes
        T* const row0 = slot.column >= 0 ? d + (begin / width) * stride + slot.column : d;
        if (how == Writes::whole) std::fill_n(d + begin, n, T(0));
        if (how == Writes::tiled)
          for (std::int64_t row = 0; row < n / width; ++row) std::fill_n(row0 + row * stride, width, T(0));
        continue;
      }
      const T* g = reg[plan.slot_register[j]].p;
      // Rows read again in every block add into this block's partial, the rest into d.
      if (partial_at[slot.input] >= 0) d = partial_sums + index * partial_size + partial_at[slot.input];
      T* const row0 = slot.column >= 0 ? d + (begin / width) * stride + slot.column : d;
      const std::int64_t size = inputs[slot.input].numel();
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
