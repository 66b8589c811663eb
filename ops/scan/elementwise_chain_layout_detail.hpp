#pragma once
// Internal to the elementwise chain (elementwise_chain_detail.hpp): how its elements split
// into blocks, how each slot reads its input and how each input's gradient is written, for
// one set of input shapes. A loop calls its chain with the same shapes at every step, and
// working this out at every call cost as much as a small chain's arithmetic: it is made at
// the first call and kept in the program (ChainProgram::layouts).
#include <cstdint>
#include <memory>
#include <optional>

#include <recur/autodiff/op_box.hpp>
#include <recur/core/small_vector.hpp>
#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>

namespace recur::scan_engine::detail::chain {

// How an input's gradient is written by its slots.
enum class Writes : std::uint8_t {
  sum,    // zeroed first, every slot adds its share
  whole,  // one slot reads the whole input: it writes every element once
  tiled,  // its slots are columns that tile its rows (a gate each): each writes its columns once
};

struct ChainLayout {
  boost::container::small_vector<Shape, 8> shapes;  // the inputs' shapes it was made for
  std::int64_t total = 0, width = 1, block = 1;  // elements, last size, per block
  Flags strided;   // per slot: columns of a wider input, read in place row by row
  Flags repeated;  // per slot: read as a block-sized copy (a broadcast input, columns of one row)
  // Per slot: its input's row length where it is strided (its rows' distance), else 0.
  boost::container::small_vector<std::int64_t, 16> row_stride;
  // How many slots a call copies (the repeated ones): forward's, and backward's (only the
  // slots it reads, ChainProgram::slots_read).
  std::size_t copies = 0, copies_read = 0;
  boost::container::small_vector<Writes, 8> writes;  // per input
  // Per input whose slots sum rows of several blocks into the same elements (a broadcast
  // input, a row of columns read in every row) and are summed (Writes::sum): where its
  // partials start in a block's partial sums, of partial_size; -1 for the others.
  boost::container::small_vector<std::int64_t, 8> partial_at;
  std::int64_t partial_size = 0;
  // Where the chain compiles on these shapes (compilable: its elements fit one block): the
  // forward's calls, made with the layout, and the backward's per set of passes, made at the
  // first backward with them.
  std::optional<CompiledForward> forward_calls;
  KeptPerKey<CompiledBackward> backward_calls;
};

// A slot of columns of an input with one row, read again in every row of a chain of more
// (of a chain of one row, it is read as any other); total and width are the chain's
// elements and last size.
inline bool one_row(const Tensor& in, std::int64_t total, std::int64_t width) {
  return in.numel() == in.shape().back() && total != width;
}

// The layout for these inputs: the one `p` keeps for their shapes, else a new one, which `p`
// then keeps (ChainProgram::layouts; `hold` keeps it alive where `p` does not).
const ChainLayout& layout_of(const ChainProgram& p, const InputList<Tensor>& inputs,
                             std::shared_ptr<const ChainLayout>& hold);

}  // namespace recur::scan_engine::detail::chain
