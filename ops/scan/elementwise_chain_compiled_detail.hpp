#pragma once
// Internal to the elementwise chain (elementwise_chain_detail.hpp): a chain whose elements fit
// one block, compiled into the list of kernel calls its forward makes, and per set of backward
// passes the list its backward makes. The interpreter (ChainBlocks, chain::backward) works
// out at every call where each instruction and pass reads and writes; with one block each of
// those places is a fixed offset into one of a few buffers (an input, a value, a gradient, a
// thread's scratch), so a call only finds those buffers and runs the list. A captured loop
// runs its chain once per step on the same shapes: at a batch of one, finding the places cost
// more than the arithmetic. The calls are the interpreter's, with the same kernels in the same
// order: the same bits.
#include <cstdint>
#include <span>
#include <vector>

#include <recur/ops/kernels/chain_kernels_detail.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>

namespace recur::scan_engine::detail::chain {

struct ChainLayout;  // elementwise_chain_layout_detail.hpp
struct ChainPasses;  // elementwise_chain_passes_detail.hpp

// Element `offset` of buffer `base` of a call's table of buffers. Entry kNowhere of every
// table is nullptr (an operand a rule does not read): a place is found without a test.
struct Place {
  static constexpr std::uint16_t kNowhere = 0;
  std::uint16_t base = kNowhere;
  std::int64_t offset = 0;
};

// One kernel call over `len` elements.
struct CompiledCall {
  enum class Kind : std::uint8_t {
    code,       // out = code(a, b) (ChainBlocks::run_instruction's kernels)
    grad,       // out (+)= rule(g = a, u = b, v = c) (chain_grad_row)
    grad_then,  // out (+)= then(rule(g = a, u = b, v = c), w = d) (chain_grad_then_row)
    tile,       // out[i] = a[i % period] for i < len (a block-sized copy of a repeated slot)
    fold,       // out[i] += a[r + i] for i < period, r = 0, period, ... < len (summing repeats)
    zero,       // out[i] = 0 for i < len
  };
  Kind kind = Kind::code;
  ChainCode code = ChainCode::add;
  recur::detail::ChainGrad rule{}, then{};
  bool accumulate = false;
  Place a, b, c, d, out;
  std::int64_t len = 0, period = 0;
};

// The buffers a compiled forward's calls name (after kNowhere): the inputs' elements, then each instruction's
// values (where a backward reads them, else a thread's scratch), then the block-sized copies.
struct ForwardBases {
  std::size_t inputs = 0, values = 0, copies = 0;
  std::size_t size = 0;
};
// A compiled backward's (after kNowhere): the inputs' elements, each instruction's values (kept or made again),
// the outputs' gradients as given, the inputs' gradients, then the registers' scratch, the
// copies', the partial sums' and the values made again (ChainProgram::recomputed, a row each).
struct BackwardBases {
  std::size_t inputs = 0, values = 0, out_grads = 0, grads = 0, registers = 0, copies = 0, partials = 0, remade = 0;
  std::size_t size = 0;
};

struct CompiledForward {
  ForwardBases bases;
  std::vector<CompiledCall> calls;
};
struct CompiledBackward {
  Flags needs, defined;  // what the passes compiled were made for (ChainPasses::needs, defined)
  BackwardBases bases;
  std::vector<CompiledCall> calls;
};

// Whether chains whose elements fit one block run compiled (ChainLayout::forward_calls): on
// unless RECUR_SCAN_CHAIN=interpreted (read once) or set_compiled_chains(false), which leave
// every chain to the interpreter (the tests compare the two). For the whole process.
bool compiled_chains();
void set_compiled_chains(bool on);

// Whether `p` on inputs of `layout` compiles: its elements fit one block (and its buffers a
// call's table).
bool compilable(const ChainProgram& p, const ChainLayout& layout);
// The calls of the forward of `p` on inputs of `layout` (compilable).
CompiledForward compile_forward(const ChainProgram& p, const ChainLayout& layout);
// The calls of its backward by `passes` on that layout.
CompiledBackward compile_backward(const ChainProgram& p, const ChainLayout& layout, const ChainPasses& passes);

// Runs `calls` on `bases` (the pointers the table names, const or not as the calls use them).
template <class T>
void run_calls(std::span<const CompiledCall> calls, T* const* bases);
// How many lists of calls this thread has run (a forward's or a backward's): the tests see
// which path a chain took.
std::uint64_t compiled_runs();

}  // namespace recur::scan_engine::detail::chain
