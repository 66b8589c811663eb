#pragma once
// Internal to captured scan steps (step_rewrite.cpp): a chain of elementwise ops of one
// shape fused into one op, as the fused layers' cell kernels do by hand. Each op alone
// reads and writes whole tensors (and allocates its output); the chain runs over blocks of
// a few thousand elements that stay in cache, writes only the values that leave it, and its
// backward recomputes the block's values from the inputs instead of keeping them.
//
// Values equal the ops' own: tanh and sigmoid take the ops' kernels, the others are the same
// arithmetic. Gradients are the ops' rules; a gradient summed over a broadcast input (a
// bias) adds its rows in another order than sum_to. Under create_graph the chain records
// its ops and their rules, so gradients of gradients work.
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <recur/autodiff/op_box.hpp>
#include <recur/core/shape.hpp>
#include <recur/core/small_vector.hpp>

namespace recur::scan_engine::detail {
namespace chain {
struct ChainLayout;  // elementwise_chain_layout_detail.hpp
struct ChainPasses;  // elementwise_chain_passes_detail.hpp
}

// Values a chain works out for one key (the layout of its input shapes, its backward's
// passes) and keeps while its program lives. A loop calls its chain with the same key at
// every step, so the last one is found first, through an atomic pointer (no lock, no count);
// another is looked for, or made and kept, under a lock. A program meets one key in practice:
// past kMax kept, what is made lives in the caller's `hold` only.
template <class V>
class KeptPerKey {
 public:
  template <class Matches, class Make>
  const V& get(const Matches& matches, const Make& make, std::shared_ptr<const V>& hold) const {
    if (const V* last = last_.load(std::memory_order_acquire); last && matches(*last)) return *last;
    const std::lock_guard<std::mutex> lock(mutex_);
    for (const std::shared_ptr<const V>& v : kept_)
      if (matches(*v)) {
        last_.store(v.get(), std::memory_order_release);
        return *v;
      }
    hold = make();
    if (kept_.size() < kMax) {
      kept_.push_back(hold);
      last_.store(hold.get(), std::memory_order_release);
    }
    return *hold;
  }

 private:
  static constexpr std::size_t kMax = 16;
  mutable std::mutex mutex_;
  mutable std::vector<std::shared_ptr<const V>> kept_;
  mutable std::atomic<const V*> last_{nullptr};
};

// Per slot, input or instruction flags: a chain runs at every step, kept off the heap.
using Flags = boost::container::small_vector<std::uint8_t, 64>;

// What the chain can fuse, by op name: add, sub, mul, div, neg, tanh, sigmoid, exp, relu.
enum class ChainCode : std::uint8_t { add, sub, mul, div, neg, tanh, sigmoid, exp, relu };
std::optional<ChainCode> chain_code(std::string_view op);

struct ChainOperand {
  bool is_input = true;     // one of the chain's slots, else an earlier instruction's value
  std::uint16_t index = 0;
};

// An input as the chain reads it: the op's input `input` whole or broadcast (column < 0),
// or its columns [column, column + width) of every row, width the chain's last size: a
// slice along the last axis read in place instead of copied (the gates of a merged product).
struct ChainSlot {
  std::uint16_t input = 0;
  std::int64_t column = -1;
  bool operator==(const ChainSlot&) const = default;
};

struct ChainInstruction {
  ChainCode code;
  ChainOperand a, b;  // b unused by unary codes
};
inline bool unary(ChainCode c) { return c >= ChainCode::neg; }

// An operand's gradient register in backward: instruction values' first, then slots'.
inline std::size_t register_of(const ChainOperand& o, std::size_t n_code) {
  return o.is_input ? n_code + o.index : std::size_t{o.index};
}

struct ChainProgram {
  std::vector<ChainSlot> slots;  // what ChainOperand::index names for an input operand
  std::vector<ChainInstruction> code;
  std::vector<std::uint16_t> outputs;  // the instructions whose values leave the chain, in order
  Shape shape;                         // of every value in the chain
  // The ops the instructions stand for, one per instruction (create_graph records them).
  std::vector<recur::detail::OpBox> ops;
  // The values the backward reads that are not outputs, kept by a forward with gradients,
  // and per output and per slot whether the backward reads it (elementwise_chain_op fills them).
  std::vector<std::uint16_t> kept;
  std::vector<std::uint8_t> outputs_read, slots_read;
  // Values the backward reads but makes again per block instead (a tanh c' from the kept
  // values and inputs it is made of), with the values they are made from, in order.
  std::vector<std::uint16_t> recomputed;
  // Per gradient register (values', then slots'): the register it reads instead of a copy of
  // its own, where its only share is a copy of that register's gradient (an operand that only
  // a sum, or a difference as its first operand, reads); -1 where it has its own. Such a
  // register gets no other share, and the one it names none after their reader ran. Per
  // output: whether no instruction reads it and it is listed once (backward reads its
  // gradient where it is given).
  std::vector<std::int32_t> gradient_copy_of;
  std::vector<std::uint8_t> output_not_operand;
  // Per instruction: 1 where it is a one-operand instruction whose value has one share of
  // gradient, from a later instruction (not a copy), and hands it on by its own rule in the
  // same pass as that reader's rule (no register in between, one pass fewer), where that
  // keeps the order in which its operand's gradient adds its shares.
  std::vector<std::uint8_t> folded;
  // The layouts of the input shapes the chain ran on (chain::layout_of), and its backward's
  // passes for the inputs wanting gradients and outputs' gradients given (chain::passes_of):
  // the same at every step of a loop.
  KeptPerKey<chain::ChainLayout> layouts;
  KeptPerKey<chain::ChainPasses> passes;
};

// The op of a chain, for a captured step's program: inputs as in the program's operands,
// outputs the values `outputs` names (the first its main output).
recur::detail::OpBox elementwise_chain_op(std::shared_ptr<ChainProgram> program);
// The program of `op` when it is elementwise_chain_op's, else nullptr.
const ChainProgram* chain_program_of(const recur::detail::OpBox& op);

}  // namespace recur::scan_engine::detail
