// A chain's layout for one set of input shapes (elementwise_chain_layout_detail.hpp).
#include <recur/ops/scan/elementwise_chain_layout_detail.hpp>

#include <algorithm>

namespace recur::scan_engine::detail::chain {
namespace {

// Elements per block: whole periods of the broadcast inputs, about 2048 elements.
std::int64_t block_size(std::int64_t total, std::int64_t period) {
  return std::min(total, period * std::max<std::int64_t>(1, 2048 / period));
}

// Per input, how its slots write its gradient: once, with no zeroing first and no sum, where
// each element has exactly one slot.
void find_writes(const ChainProgram& p, const InputList<Tensor>& inputs, ChainLayout& l) {
  l.writes.assign(inputs.size(), Writes::sum);
  for (std::size_t in = 0; in < inputs.size(); ++in) {
    // Tiled: n slots, each a whole row's columns [c w, c w + w) for a distinct c < n, n w the row.
    std::uint64_t seen = 0;
    std::int64_t n = 0;
    bool tiles = l.width > 0, whole = false;
    for (const ChainSlot& slot : p.slots) {
      if (slot.input != in) continue;
      ++n;
      whole = slot.column < 0 && inputs[in].numel() == l.total;
      tiles = tiles && slot.column >= 0 && slot.column % l.width == 0 && slot.column / l.width < 64 &&
              (seen >> (slot.column / l.width) & 1U) == 0 && !one_row(inputs[in], l.total, l.width);
      if (tiles) seen |= std::uint64_t{1} << (slot.column / l.width);
    }
    if (n == 1 && whole) l.writes[in] = Writes::whole;
    else if (tiles && n > 0 && n * l.width == inputs[in].shape().back() && seen == (n == 64 ? ~0ULL : (1ULL << n) - 1))
      l.writes[in] = Writes::tiled;
  }
}

std::shared_ptr<const ChainLayout> make_layout(const ChainProgram& p, const InputList<Tensor>& inputs) {
  auto made = std::make_shared<ChainLayout>();
  ChainLayout& l = *made;
  for (std::size_t i = 0; i < inputs.size(); ++i) l.shapes.push_back(inputs[i].shape());
  l.total = numel(p.shape);
  l.width = p.shape.empty() ? 1 : p.shape.back();
  std::int64_t period = 1;  // blocks start at whole periods of every broadcast input
  for (const ChainSlot& slot : p.slots) {
    if (slot.column >= 0) period = std::max(period, l.width);  // blocks of whole rows
    else if (inputs[slot.input].numel() != l.total) period = std::max(period, inputs[slot.input].numel());
  }
  l.block = block_size(l.total, period);
  // A slot of columns is read in place, row by row; a broadcast input (and a slot of columns
  // of one row) reads the same in every block (blocks start at whole periods): a block-sized
  // copy of it.
  for (const ChainSlot& slot : p.slots) {
    const Tensor& in = inputs[slot.input];
    const bool strided = slot.column >= 0 && !one_row(in, l.total, l.width);
    const bool repeated = !strided && (slot.column >= 0 || in.numel() != l.total);
    l.strided.push_back(strided);
    l.repeated.push_back(repeated);
    l.row_stride.push_back(strided ? in.shape().back() : 0);
    l.copies += repeated;
    const std::size_t j = l.repeated.size() - 1;
    l.copies_read += repeated && j < p.slots_read.size() && p.slots_read[j];
  }
  find_writes(p, inputs, l);
  l.partial_at.assign(inputs.size(), -1);
  for (std::size_t j = 0; j < p.slots.size(); ++j) {
    const std::uint16_t in = p.slots[j].input;
    if (!l.repeated[j] || l.writes[in] != Writes::sum || l.partial_at[in] >= 0) continue;
    l.partial_at[in] = l.partial_size;
    l.partial_size += inputs[in].numel();
  }
  if (compilable(p, l)) l.forward_calls = compile_forward(p, l);
  return made;
}

bool made_for(const ChainLayout& l, const InputList<Tensor>& inputs) {
  if (l.shapes.size() != inputs.size()) return false;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    if (l.shapes[i] != inputs[i].shape()) return false;
  return true;
}

}  // namespace

const ChainLayout& layout_of(const ChainProgram& p, const InputList<Tensor>& inputs,
                             std::shared_ptr<const ChainLayout>& hold) {
  return p.layouts.get([&](const ChainLayout& l) { return made_for(l, inputs); },
                       [&] { return make_layout(p, inputs); }, hold);
}

}  // namespace recur::scan_engine::detail::chain
