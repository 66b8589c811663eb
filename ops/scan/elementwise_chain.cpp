// A fused chain of elementwise ops (elementwise_chain_detail.hpp).
#include <recur/ops/scan/elementwise_chain_detail.hpp>

#include <algorithm>
#include <cmath>
#include <functional>
#include <string>

#include <recur/autodiff/no_grad.hpp>
#include <recur/core/small_vector.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
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

// An operand's gradient register in backward: instruction values' first, then slots'.
std::size_t register_of(const ChainOperand& o, std::size_t n_code) {
  return o.is_input ? n_code + o.index : std::size_t{o.index};
}

// Per slot, input or instruction flags: a chain runs at every step, kept off the heap.
using Flags = boost::container::small_vector<std::uint8_t, 64>;

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

// Elements of a block as a chain reads or writes them: contiguous from p (stride 0), or rows
// of the chain's width, `stride` elements apart (a slot of columns of a wider input).
template <class U>
struct Run {
  U* p = nullptr;
  std::int64_t stride = 0;
};

// The inputs of a chain as each block reads them, and its instructions run over a block.
// With `read` (backward), only the slots it flags are read: the others give nullptr.
template <class T>
class ChainBlocks {
 public:
  ChainBlocks(const ChainProgram& p, const InputList<Tensor>& inputs, const std::vector<std::uint8_t>* read = nullptr)
      : p_(p), inputs_(inputs), skipped_(p.slots.size(), 0) {
    if (read)
      for (std::size_t j = 0; j < p.slots.size(); ++j) skipped_[j] = !(*read)[j];
    total_ = numel(p.shape);
    width_ = p.shape.empty() ? 1 : p.shape.back();
    period_ = 1;
    for (const ChainSlot& slot : p.slots) {
      if (slot.column >= 0) period_ = std::max(period_, width_);  // blocks of whole rows
      else if (inputs[slot.input].numel() != total_) period_ = std::max(period_, inputs[slot.input].numel());
    }
    block_ = block_size(total_, period_);
    // A broadcast input reads the same in every block (blocks start at whole periods): its
    // block-sized copy lives in a thread's scratch (a chain runs at every step, and
    // allocating it would cost more). A slot of columns is read in place, row by row (strided).
    own_.assign(p.slots.size(), nullptr);
    strided_.assign(p.slots.size(), 0);
    auto strided = [&](std::size_t j) {
      return p.slots[j].column >= 0 && !one_row(inputs[p.slots[j].input], total_, width_);
    };
    std::size_t copies = 0;
    for (std::size_t j = 0; j < p.slots.size(); ++j)
      copies += !skipped_[j] && !strided(j) && (p.slots[j].column >= 0 || inputs[p.slots[j].input].numel() != total_);
    T* next = scratch<T>(2, copies * static_cast<std::size_t>(block_));
    for (std::size_t j = 0; j < p.slots.size(); ++j) {
      const ChainSlot& slot = p.slots[j];
      const Tensor& in = inputs[slot.input];
      if (strided(j)) {
        strided_[j] = 1;
        continue;
      }
      if (skipped_[j] || (slot.column < 0 && in.numel() == total_)) continue;
      T* own = own_[j] = next;
      next += block_;
      const T* x = in.data<T>();
      // Columns of a single row (a bias of every gate) are the same in every row; a broadcast
      // input repeats its n elements (the block is whole periods).
      const std::int64_t n = slot.column >= 0 ? width_ : in.numel();
      if (slot.column >= 0) x += slot.column;
      for (std::int64_t i = 0; i < block_; i += n) std::copy_n(x, std::min(n, block_ - i), own + i);
    }
  }
  // A slot of columns of an input with one row, read again in every row of a chain of more
  // (of a chain of one row, it is read as any other); total and width are the chain's
  // elements and last size.
  static bool one_row(const Tensor& in, std::int64_t total, std::int64_t width) {
    return in.numel() == in.shape().back() && total != width;
  }
  std::int64_t total() const { return total_; }
  std::int64_t block() const { return block_; }
  std::int64_t width() const { return width_; }
  // f(begin, n) for each block of elements [begin, begin + n), in order.
  template <class F>
  void each_block(F&& f) const {
    for (std::int64_t begin = 0; begin < total_; begin += block_) f(begin, std::min(block_, total_ - begin));
  }

  // An operand's elements [begin, begin + n) (whole periods): `values(k)` gives instruction
  // k's, contiguous; a slot of columns gives its first row's and the input's row stride.
  template <class Values>
  Run<const T> operand(const ChainOperand& o, std::int64_t begin, Values&& values) const {
    if (!o.is_input) return {values(o.index)};
    if (skipped_[o.index]) return {};
    const ChainSlot& slot = p_.slots[o.index];
    const Tensor& in = inputs_[slot.input];
    if (strided_[o.index]) {
      const std::int64_t stride = in.shape().back();
      return {in.data<T>() + (begin / width_) * stride + slot.column, stride};
    }
    if (!own_[o.index]) return {in.data<T>() + begin};
    return {own_[o.index]};
  }

  // f(row, len) over a block of n elements: once (0, n) when every run is contiguous, else
  // once per row (row, width): a slot of columns is read and written in place, row by row.
  template <class F>
  void each_run(std::int64_t n, std::initializer_list<std::int64_t> strides, F&& f) const {
    if (n == width_ || std::all_of(strides.begin(), strides.end(), [](std::int64_t s) { return s == 0; })) {
      f(0, n);
      return;
    }
    for (std::int64_t row = 0; row < n / width_; ++row) f(row, width_);
  }
  // Run r's elements from row `row` of the block on.
  template <class U>
  U* at(const Run<U>& r, std::int64_t row) const {
    return r.p ? r.p + row * (r.stride ? r.stride : width_) : nullptr;
  }

  // Every instruction's value over elements [begin, begin + n), into values(k).
  template <class Values>
  void run(std::int64_t begin, std::int64_t n, Values&& values) {
    for (std::size_t k = 0; k < p_.code.size(); ++k) run_instruction(k, begin, n, values, values(k));
  }
  // Instruction k's value over elements [begin, begin + n), into y.
  template <class Values>
  void run_instruction(std::size_t k, std::int64_t begin, std::int64_t n, Values&& values, T* y) const {
    const ChainInstruction& in = p_.code[k];
    const Run<const T> ra = operand(in.a, begin, values);
    const Run<const T> rb = unary(in.code) ? Run<const T>{} : operand(in.b, begin, values);
    const auto& kernels = nn::detail::kernels<T>();
    using recur::detail::ChainArith;
    each_run(n, {ra.stride, rb.stride}, [&](std::int64_t row, std::int64_t len) {
      const T* a = at(ra, row);
      const T* b = at(rb, row);
      T* const out = y + row * width_;
      switch (in.code) {
        case ChainCode::add: kernels.chain_arith_row(ChainArith::add, a, b, out, len); break;
        case ChainCode::sub: kernels.chain_arith_row(ChainArith::sub, a, b, out, len); break;
        case ChainCode::mul: kernels.chain_arith_row(ChainArith::mul, a, b, out, len); break;
        case ChainCode::div: kernels.chain_arith_row(ChainArith::div, a, b, out, len); break;
        case ChainCode::neg: for (std::int64_t i = 0; i < len; ++i) out[i] = -a[i]; break;
        case ChainCode::tanh: recur::detail::tanh_values(a, out, len); break;
        case ChainCode::sigmoid: recur::detail::sigmoid_values(a, out, len); break;
        case ChainCode::exp: for (std::int64_t i = 0; i < len; ++i) out[i] = std::exp(a[i]); break;
        case ChainCode::relu: for (std::int64_t i = 0; i < len; ++i) out[i] = a[i] <= 0 ? T(0) : a[i]; break;
      }
    });
  }

 private:
  const ChainProgram& p_;
  InputList<Tensor> inputs_;
  std::int64_t total_ = 0, width_ = 1, period_ = 1, block_ = 1;
  boost::container::small_vector<T*, 32> own_;  // per slot: its repeats; nullptr: read in place
  Flags strided_;                                // per slot: columns of a wider input, read in place row by row
  Flags skipped_;                                // per slot: not read (backward, a sum's operand)
};

// How an input's gradient is written by its slots.
enum class Writes : std::uint8_t {
  sum,    // zeroed first, every slot adds its share
  whole,  // one slot reads the whole input: it writes every element once
  tiled,  // its slots are columns that tile its rows (a gate each): each writes its columns once
};

// Per input, how its slots write its gradient (writes once, with no zeroing first and no
// sum, where each element has exactly one slot).
template <class T>
boost::container::small_vector<Writes, 8> gradient_writes(const ChainProgram& p, const InputList<Tensor>& inputs,
                                                          std::int64_t width, std::int64_t total) {
  boost::container::small_vector<Writes, 8> writes(inputs.size(), Writes::sum);
  for (std::size_t in = 0; in < inputs.size(); ++in) {
    // Tiled: n slots, each a whole row's columns [c w, c w + w) for a distinct c < n, n w the row.
    std::uint64_t seen = 0;
    std::int64_t n = 0;
    bool tiles = width > 0, whole = false;
    for (const ChainSlot& slot : p.slots) {
      if (slot.input != in) continue;
      ++n;
      whole = slot.column < 0 && inputs[in].numel() == total;
      tiles = tiles && slot.column >= 0 && slot.column % width == 0 && slot.column / width < 64 &&
              (seen >> (slot.column / width) & 1U) == 0 && !ChainBlocks<T>::one_row(inputs[in], total, width);
      if (tiles) seen |= std::uint64_t{1} << (slot.column / width);
    }
    if (n == 1 && whole) writes[in] = Writes::whole;
    else if (tiles && n > 0 && n * width == inputs[in].shape().back() && seen == (n == 64 ? ~0ULL : (1ULL << n) - 1))
      writes[in] = Writes::tiled;
  }
  return writes;
}

// The chain's backward on values: its rules per element, block by block, reading the
// values forward kept (values[k]: instruction k's, every element). Gradient registers per value and per
// input live in scratch; an input's gradient is written once per block.
template <class T>
Grads<Tensor> chain_backward(const ChainProgram& p, const InputList<Tensor>& inputs, std::span<const T* const> values,
                             const InputList<Tensor>& out_grads, std::span<const std::uint8_t> needs) {
  ChainBlocks<T> blocks(p, inputs, &p.slots_read);
  const std::int64_t block = blocks.block(), total = blocks.total(), width = blocks.width();
  const std::size_t n_code = p.code.size(), n_slots = p.slots.size();
  Grads<Tensor> grads(inputs.size());
  const auto writes = gradient_writes<T>(p, inputs, width, total);
  for (std::size_t in = 0; in < inputs.size(); ++in)
    if (needs[in])
      grads[in] = writes[in] == Writes::sum ? zeros(inputs[in].shape(), inputs[in].dtype())
                                            : Tensor::empty(inputs[in].shape(), inputs[in].dtype());
  T* const regs = scratch<T>(1, (n_code + n_slots) * static_cast<std::size_t>(block));
  const auto& kernels = nn::detail::kernels<T>();
  // The values made again for each block (ChainProgram::recomputed), in the forward's scratch.
  T* const remade = scratch<T>(0, p.recomputed.size() * static_cast<std::size_t>(block));
  boost::container::small_vector<std::int32_t, 32> remade_row(n_code, -1);
  for (std::size_t r = 0; r < p.recomputed.size(); ++r) remade_row[p.recomputed[r]] = static_cast<std::int32_t>(r);
  Flags written(n_code + n_slots, 0);
  // Per slot: its input's gradient where the slot alone writes its elements (whole, or its
  // columns of every row), written in place: the first row's elements and the row stride.
  // nullptr where slots sum their shares (a register of scratch, added after each block).
  boost::container::small_vector<Run<T>, 32> in_place(n_slots), slot_reg(n_slots);
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
  blocks.each_block([&](std::int64_t begin, std::int64_t n) {
    auto value = [&](std::size_t k) -> const T* {
      if (values[k]) return values[k] + begin;
      return remade_row[k] < 0 ? nullptr : remade + remade_row[k] * block;
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
    using Rule = recur::detail::ChainGrad;
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
      // wants a gradient.
      auto add = [&](const ChainOperand& o, Rule rule, Run<const T> u = {}, Run<const T> v = {}) {
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
        case ChainCode::neg: add(in.a, Rule::negate); break;
        case ChainCode::tanh: add(in.a, Rule::tanh, y); break;
        case ChainCode::sigmoid: add(in.a, Rule::sigmoid, y); break;
        case ChainCode::exp: add(in.a, Rule::times, y); break;
        case ChainCode::relu: add(in.a, Rule::relu, a); break;
      }
    }
    for (std::size_t j = 0; j < n_slots; ++j) {  // the slots' gradients of this block, into their inputs'
      const ChainSlot& slot = p.slots[j];
      if (!needs[slot.input]) continue;
      T* d = grads[slot.input].data<T>();
      const Tensor& in = inputs[slot.input];
      const std::int64_t size = in.numel();
      const std::int64_t stride = slot.column < 0 || ChainBlocks<T>::one_row(in, total, width) ? 0 : in.shape().back();
      T* const row0 = slot.column >= 0 ? d + (begin / width) * stride + slot.column : d;
      const Writes how = writes[slot.input];
      if (!written[n_code + j]) {  // no gradient reached the slot: zeros where only it writes
        if (how == Writes::whole) std::fill_n(d + begin, n, T(0));
        if (how == Writes::tiled)
          for (std::int64_t row = 0; row < n / width; ++row) std::fill_n(row0 + row * stride, width, T(0));
        continue;
      }
      if (how != Writes::sum) continue;  // written in place
      const T* g = reg(n_code + j).p;
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
  return grads;
}

// What the backward reads: per instruction, its value (the result of tanh, sigmoid, exp and
// div, whose derivatives are written with it, and the operands of mul, div and relu); per
// slot, the input it reads in place (such an operand that is an input). The others (sums,
// differences, negations) are not kept: a chain saves what a hand-fused cell saves, and a
// captured loop drops an input only a sum reads.
struct BackwardReads {
  std::vector<std::uint8_t> values, slots;
};
BackwardReads read_by_backward(const ChainProgram& p) {
  BackwardReads read{std::vector<std::uint8_t>(p.code.size(), 0), std::vector<std::uint8_t>(p.slots.size(), 0)};
  auto mark = [&](const ChainOperand& o) { (o.is_input ? read.slots : read.values)[o.index] = 1; };
  for (std::size_t k = 0; k < p.code.size(); ++k) {
    const ChainInstruction& in = p.code[k];
    switch (in.code) {
      case ChainCode::tanh: case ChainCode::sigmoid: case ChainCode::exp: read.values[k] = 1; break;
      case ChainCode::div: read.values[k] = 1; mark(in.b); break;
      case ChainCode::mul: mark(in.a); mark(in.b); break;
      case ChainCode::relu: mark(in.a); break;
      default: break;
    }
  }
  return read;
}

// Whether instruction k's value leaves the chain.
bool is_output(const ChainProgram& p, std::size_t k) {
  return std::find(p.outputs.begin(), p.outputs.end(), k) != p.outputs.end();
}

// The read values backward makes again instead of the forward keeping them: a tanh, sigmoid
// or exp (its rule reads its result) made by sums, differences, negations and products from
// kept values and read slots alone, as the fused LSTM makes tanh c' again from c. One
// transcendental per element in backward costs less than a row of memory per step held
// from forward to backward. Returns per instruction whether it is made again (the values and
// the sums and products they are made from); `keep` loses the values made again.
Flags made_again(const ChainProgram& p, const BackwardReads& read, Flags& keep) {
  const std::size_t n = p.code.size();
  Flags again(n, 0);
  auto cheap = [](ChainCode c) { return c == ChainCode::add || c == ChainCode::sub || c == ChainCode::mul || c == ChainCode::neg; };
  // Whether operand o can be made from what backward holds; the cheap values it needs go to `need`.
  std::function<bool(const ChainOperand&, Flags&)> makeable = [&](const ChainOperand& o, Flags& need) {
    if (o.is_input) return read.slots[o.index] != 0;
    const std::size_t j = o.index;
    if (keep[j] || again[j] || need[j]) return true;
    if (!cheap(p.code[j].code)) return false;
    need[j] = 1;
    return makeable(p.code[j].a, need) && (unary(p.code[j].code) || makeable(p.code[j].b, need));
  };
  for (std::size_t k = 0; k < n; ++k) {
    const ChainCode c = p.code[k].code;
    if (!keep[k] || is_output(p, k) || (c != ChainCode::tanh && c != ChainCode::sigmoid && c != ChainCode::exp)) continue;
    Flags need(n, 0);
    if (!makeable(p.code[k].a, need)) continue;
    keep[k] = 0;
    again[k] = 1;
    for (std::size_t j = 0; j < n; ++j) again[j] = again[j] || need[j];
  }
  return again;
}

struct ElementwiseChain {
  static constexpr std::string_view name = "scan_elementwise_chain";
  // Its backward runs forward again when its values were dropped: a checkpointed loop drops
  // them even where it keeps the chain's output (the step's), and makes them once per pass.
  static constexpr bool remakes_saved = true;
  std::shared_ptr<const ChainProgram> program;
  explicit ElementwiseChain(std::shared_ptr<const ChainProgram> p) : program(std::move(p)) {}
  // From the last forward with gradients on (`saved`), what backward reads: the values that
  // stay inside the chain ([instructions, elements], a row each) and the outputs after the
  // first that it reads (undefined where it does not: their nodes hold them). The first it
  // reads from its node (BackwardArgs::output), which a loop may point at its stacked copy:
  // a copy of its own would be held twice. And the outputs after the first, for more_outputs().
  mutable Tensor inner;
  mutable std::vector<Tensor> outputs, more;
  mutable bool saved = false;

  ElementwiseChain fresh_copy() const { return ElementwiseChain(program); }

  // Where instruction k's values are: its output's buffer, its row of `inner`, or nowhere
  // (nullptr: backward does not read them).
  template <class T>
  boost::container::small_vector<T*, 32> value_rows() const {
    const ChainProgram& p = *program;
    boost::container::small_vector<T*, 32> rows(p.code.size(), nullptr);
    for (std::size_t o = 0; o < p.outputs.size(); ++o)
      if (outputs[o].defined()) rows[p.outputs[o]] = outputs[o].template data<T>();
    std::int64_t row = 0;
    const std::int64_t total = inner.defined() ? inner.size(1) : 0;  // [kept, elements]
    for (std::size_t k : p.kept) rows[k] = inner.template data<T>() + row++ * total;
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
  // The outputs it saved, and the inputs whose slots its rules read (all of them when it
  // has to run forward again first: recorded without gradients, or released).
  bool backward_reads(std::size_t which) const {
    if (which == recur::detail::kBackwardOutput || !saved) return true;
    const ChainProgram& p = *program;
    for (std::size_t j = 0; j < p.slots_read.size(); ++j)
      if (p.slots_read[j] && p.slots[j].input == which) return true;
    return false;
  }
  Grads<Tensor> saved_tensors() const {
    Grads<Tensor> held;
    for (const Tensor& o : outputs)
      if (o.defined()) held.push_back(o);
    if (inner.defined()) held.push_back(inner);
    for (const Tensor& o : more)  // outputs not yet taken by more_outputs()
      if (o.defined()) held.push_back(o);
    return held;
  }
  void drop_saved() const {
    inner = Tensor();
    outputs.clear();
    more.clear();  // a forward run again for backward (or a replay) leaves them unread
    saved = false;
  }

  // With gradients on, every value backward reads is written where it will read it (the
  // outputs in their own buffers, so that a kept output does not hold the others); the
  // others, and every value without gradients, stay in a block's scratch.
  Tensor forward(std::span<const Tensor> inputs) const {
    boost::container::small_vector<const Tensor*, 8> at;
    for (const Tensor& t : inputs) at.push_back(&t);
    return forward_list(InputList<Tensor>(at.data(), at.size()));
  }
  // forward on the inputs as a captured step replays them (the tape's values, not copied).
  Tensor forward_list(const InputList<Tensor>& inputs) const {
    const ChainProgram& p = *program;
    const std::int64_t total = numel(p.shape);
    boost::container::small_vector<Tensor, 4> outs;
    dispatch_floating(name, inputs[0].dtype(), [&]<class T>() {
      ChainBlocks<T> blocks(p, inputs);
      for (std::size_t o = 0; o < p.outputs.size(); ++o) outs.push_back(Tensor::empty(p.shape, inputs[0].dtype()));
      T* const values = scratch<T>(0, p.code.size() * static_cast<std::size_t>(blocks.block()));
      auto value = [&](std::size_t k) { return values + static_cast<std::int64_t>(k) * blocks.block(); };
      if (grad_enabled()) {
        outputs.assign(outs.begin(), outs.end());
        const auto n_inner = static_cast<std::int64_t>(p.kept.size());
        inner = n_inner > 0 ? Tensor::empty({n_inner, total}, inputs[0].dtype()) : Tensor();
        const auto rows = value_rows<T>();
        blocks.each_block([&](std::int64_t begin, std::int64_t n) {
          blocks.run(begin, n, [&](std::size_t k) { return rows[k] ? rows[k] + begin : value(k); });
        });
        for (std::size_t o = 0; o < p.outputs.size(); ++o)
          if (o == 0 || !p.outputs_read[o]) outputs[o] = Tensor();  // the first: backward reads the node's
        saved = true;
        return;
      }
      drop_saved();
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
      static const Tensor none;  // an output's gradient that did not reach the chain
      boost::container::small_vector<const Tensor*, 4> grads{&a.grad};
      for (std::size_t o = 1; o < program->outputs.size(); ++o)
        grads.push_back(o - 1 < a.more_grads.size() ? &a.more_grads[o - 1] : &none);
      const bool remade = !saved;
      if (remade) {  // recorded without gradients, released, or dropped while kept: make the values now
        EnableGrad on;
        forward_list(a.inputs);
      }
      Grads<Tensor> input_grads = dispatch_floating(name, a.grad.dtype(), [&]<class T>() {
        const auto rows = value_rows<T>();
        boost::container::small_vector<const T*, 32> values(rows.begin(), rows.end());
        if (program->outputs_read[0]) values[program->outputs[0]] = a.output.template data<T>();
        return chain_backward<T>(*program, a.inputs, std::span<const T* const>(values.data(), values.size()),
                                 InputList<Tensor>(grads.data(), grads.size()), a.needs);
      });
      if (remade) drop_saved();  // made for this pass only: held, they would add up over the loop
      return input_grads;
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

// ChainProgram::gradient_copy_of and output_not_operand. Backward visits instructions last
// first, so a reader names the register its own gradient lives in (itself, or the one it copies).
void find_gradient_copies(ChainProgram& p) {
  const std::size_t n_code = p.code.size();
  auto reg = [&](const ChainOperand& o) { return register_of(o, n_code); };
  std::vector<std::uint16_t> shares(n_code + p.slots.size(), 0);
  for (std::uint16_t k : p.outputs) ++shares[k];
  for (const ChainInstruction& in : p.code) {
    ++shares[reg(in.a)];
    if (!unary(in.code)) ++shares[reg(in.b)];
  }
  p.gradient_copy_of.assign(shares.size(), -1);
  for (std::size_t k = n_code; k-- > 0;) {
    const ChainInstruction& in = p.code[k];
    const std::int32_t lives = p.gradient_copy_of[k] >= 0 ? p.gradient_copy_of[k] : static_cast<std::int32_t>(k);
    auto copied_into = [&](const ChainOperand& o) {
      if (shares[reg(o)] == 1) p.gradient_copy_of[reg(o)] = lives;
    };
    if (in.code == ChainCode::add || in.code == ChainCode::sub) copied_into(in.a);  // d(a ± b)/da = 1
    if (in.code == ChainCode::add) copied_into(in.b);
  }
  p.output_not_operand.clear();
  for (std::uint16_t k : p.outputs) p.output_not_operand.push_back(shares[k] == 1);  // read by none, listed once
}

}  // namespace

recur::detail::OpBox elementwise_chain_op(std::shared_ptr<ChainProgram> program) {
  BackwardReads read = read_by_backward(*program);
  Flags keep(read.values.begin(), read.values.end());
  const Flags again = made_again(*program, read, keep);
  program->kept.clear();
  program->recomputed.clear();
  for (std::size_t k = 0; k < read.values.size(); ++k) {
    if (again[k]) program->recomputed.push_back(static_cast<std::uint16_t>(k));
    if (keep[k] && !is_output(*program, k))
      program->kept.push_back(static_cast<std::uint16_t>(k));
  }
  program->outputs_read.clear();
  for (std::uint16_t k : program->outputs) program->outputs_read.push_back(read.values[k]);
  program->slots_read = std::move(read.slots);
  find_gradient_copies(*program);
  return recur::detail::OpBox::make<recur::detail::kListArity>(ElementwiseChain(std::move(program)));
}

}  // namespace recur::scan_engine::detail
