#pragma once
// Internal to the elementwise chain's backward (elementwise_chain_backward.cpp): the passes it
// makes over each block, in order. Which rule writes which gradient register, and whether a
// register already holds a share, depends only on the program, on which inputs want a
// gradient and how theirs is written (the layout), and on which outputs' gradients are given.
// Worked out once for those and kept in the program (ChainProgram::passes), a block only
// finds where each pass reads and writes: deciding it again in every block of every step cost
// more than a small chain's arithmetic.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <recur/ops/kernels/chain_kernels_detail.hpp>
#include <recur/ops/scan/elementwise_chain_layout_detail.hpp>

namespace recur::scan_engine::detail::chain {

// Where a pass reads a run of elements in a block: nothing, instruction `operand.index`'s value,
// or an operand (a slot, or an instruction's value) as the instruction reads it.
struct PassSource {
  enum class Kind : std::uint8_t { none, value, operand };
  Kind kind = Kind::none;
  ChainOperand operand{};
};

// One pass over a block: register `into` gets `rule` of the gradient read (a register, or an
// output's gradient as given) and of u and v; with `folded`, then `then` of w too
// (chain_grad_then_row), in the same pass.
struct ChainPass {
  recur::detail::ChainGrad rule{}, then{};
  bool folded = false;
  bool accumulate = false;   // `into` holds a share already: added to, else written
  bool from_output = false;  // reads output `gradient`'s gradient as given, else register `gradient`
  std::uint32_t gradient = 0;
  PassSource u, v, w;
  std::uint32_t into = 0;
};

struct ChainPasses {
  // What they were made for: per input, how its gradient is written (ChainLayout::writes)
  // and whether it wants one; per output, whether its gradient is given.
  boost::container::small_vector<Writes, 8> writes;
  Flags needs, defined;
  // Per value: the output gradient it reads where it is given (output_not_operand), or -1.
  boost::container::small_vector<std::int32_t, 32> given;
  std::vector<ChainPass> passes;
  // Per slot: the register that holds its gradient (its own, or the one it reads instead of
  // a copy: ChainProgram::gradient_copy_of); and whether any gradient reached it.
  boost::container::small_vector<std::uint32_t, 32> slot_register;
  Flags slot_written;
};

// The passes for these: the ones `p` keeps when made for the same, else new ones that `p` then
// keeps (ChainProgram::passes; `hold` keeps them alive where `p` does not). `defined` per
// output: whether its gradient reached the chain.
const ChainPasses& passes_of(const ChainProgram& p, const ChainLayout& layout, std::span<const std::uint8_t> needs,
                             const Flags& defined, std::shared_ptr<const ChainPasses>& hold);

}  // namespace recur::scan_engine::detail::chain
