#pragma once
// Internal to the elementwise chain (elementwise_chain_detail.hpp): how its instructions run
// over blocks of elements that stay in cache, reading each input in place, as a copy of a
// block (a broadcast input), or row by row (a slot of columns of a merged product). The
// forward (elementwise_chain.cpp) and the backward (elementwise_chain_backward.cpp) share it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <vector>

#include <recur/core/repeated_gemm.hpp>
#include <recur/core/small_vector.hpp>
#include <recur/core/tensor.hpp>
#include <recur/core/tile_team.hpp>
#include <recur/autodiff/op_box.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/elementwise_chain_layout_detail.hpp>
#include <recur/ops/unary.hpp>

namespace recur::scan_engine::detail::chain {

// A thread's scratch of at least n elements of T, kept between calls: a chain runs once per
// step, and a fresh buffer each time would cost more than its arithmetic.
template <class T>
inline T* scratch(std::size_t slot, std::size_t n) {
  thread_local std::vector<T> buffers[4];
  std::vector<T>& b = buffers[slot];
  if (b.size() < n) b.resize(n);
  return b.data();
}

// out = code(a, b) for len elements (b unread by one-operand codes).
template <class T>
void run_code(const nn::detail::KernelTable<T>& kernels, ChainCode code, const T* a, const T* b, T* out,
              std::int64_t len) {
  using recur::detail::ChainArith;
  switch (code) {
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
}

// Elements of a block as a chain reads or writes them: contiguous from p (stride 0), or rows
// of the chain's width, `stride` elements apart (a slot of columns of a wider input).
template <class U>
struct Run {
  U* p = nullptr;
  std::int64_t stride = 0;
};

// The inputs of a chain as each block reads them, and its instructions run over a block.
// With `backward`, only the slots the backward reads (ChainProgram::slots_read) are read:
// the others give nullptr. Where each slot is read is worked out once per call (a chain runs
// at every step of a loop, and its blocks are few: at a small batch, one).
template <class T>
class ChainBlocks {
 public:
  ChainBlocks(const ChainProgram& p, const ChainLayout& layout, const InputList<Tensor>& inputs, bool backward = false)
      : p_(p), kernels_(nn::detail::kernels<T>()), total_(layout.total), width_(layout.width), block_(layout.block),
        at_(p.slots.size()) {
    // A repeated slot's block-sized copy lives in a thread's scratch (a chain runs at every
    // step, and allocating it would cost more).
    const std::size_t copies = backward ? layout.copies_read : layout.copies;
    T* next = copies > 0 ? scratch<T>(2, copies * static_cast<std::size_t>(block_)) : nullptr;
    for (std::size_t j = 0; j < p.slots.size(); ++j) {
      if (backward && !p.slots_read[j]) continue;  // stays Mode::skipped
      const ChainSlot& slot = p.slots[j];
      const Tensor& in = inputs[slot.input];
      const T* x = in.data<T>();
      if (layout.strided[j]) {
        at_[j] = {x + slot.column, layout.row_stride[j], Mode::rows};
      } else if (!layout.repeated[j]) {
        at_[j] = {x, 0, Mode::along};
      } else {
        // Columns of a single row (a bias of every gate) are the same in every row; a
        // broadcast input repeats its n elements (the block is whole periods).
        T* own = next;
        next += block_;
        const std::int64_t n = slot.column >= 0 ? width_ : in.numel();
        if (slot.column >= 0) x += slot.column;
        for (std::int64_t i = 0; i < block_; i += n) std::copy_n(x, std::min(n, block_ - i), own + i);
        at_[j] = {own, 0, Mode::fixed};
      }
    }
  }
  std::int64_t total() const { return total_; }
  std::int64_t block() const { return block_; }
  std::int64_t width() const { return width_; }
  std::int64_t blocks() const { return block_ > 0 ? (total_ + block_ - 1) / block_ : 0; }
  const nn::detail::KernelTable<T>& kernels() const { return kernels_; }
  // How many tiles the blocks run in (blas::step_work_tiles: one per thread where a loop's
  // per-step work shares over recur's threads and the chain is large enough; else one).
  std::int64_t tiles() const { return blas::step_work_tiles(total_, blocks()); }
  // f(tile, index, begin, n) for every block of elements [begin, begin + n): tile t of `tiles`
  // runs a fixed run of blocks in order (so what a tile's scratch holds never depends on
  // timing), the tiles on recur's threads (blas::for_each_step_range). f must not throw or
  // allocate: it may run on a helper.
  template <class F>
  void each_block_in_tiles(std::int64_t tiles, F&& f) const {
    if (tiles <= 1 && total_ <= block_) {  // one block: no range to split
      if (total_ > 0) f(std::int64_t{0}, std::int64_t{0}, std::int64_t{0}, total_);
      return;
    }
    blas::for_each_step_range(blocks(), tiles, [&](std::int64_t t, std::int64_t first, std::int64_t end) {
      for (std::int64_t b = first; b < end; ++b) f(t, b, b * block_, std::min(block_, total_ - b * block_));
    });
  }

  // An operand's elements [begin, begin + n) (whole periods): `values(k)` gives instruction
  // k's, contiguous; a slot of columns gives its first row's and the input's row stride.
  template <class Values>
  Run<const T> operand(const ChainOperand& o, std::int64_t begin, Values&& values) const {
    if (!o.is_input) return {values(o.index)};
    const Slot& s = at_[o.index];
    switch (s.mode) {
      case Mode::along: return {s.p + begin};
      case Mode::rows: return {s.p + (begin / width_) * s.stride, s.stride};
      case Mode::fixed: return {s.p};
      case Mode::skipped: break;
    }
    return {};
  }

  // f(row, len) over a block of n elements: once (0, n) when no run is strided (`strided`:
  // any of them is) or the block is one row, else once per row (row, width): a slot of
  // columns is read and written in place, row by row.
  template <class F>
  void each_run(std::int64_t n, bool strided, F&& f) const {
    if (!strided || n == width_) {
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
  void run(std::int64_t begin, std::int64_t n, Values&& values) const {
    for (std::size_t k = 0; k < p_.code.size(); ++k) run_instruction(k, begin, n, values, values(k));
  }
  // Instruction k's value over elements [begin, begin + n), into y.
  template <class Values>
  void run_instruction(std::size_t k, std::int64_t begin, std::int64_t n, Values&& values, T* y) const {
    const ChainInstruction& in = p_.code[k];
    const Run<const T> ra = operand(in.a, begin, values);
    const Run<const T> rb = unary(in.code) ? Run<const T>{} : operand(in.b, begin, values);
    each_run(n, (ra.stride | rb.stride) != 0, [&](std::int64_t row, std::int64_t len) {
      run_code(kernels_, in.code, at(ra, row), at(rb, row), y + row * width_, len);
    });
  }

 private:
  // How a block reads a slot: `along` from p + begin (the input whole), `rows` its columns in
  // place (rows `stride` apart), `fixed` a block-sized copy at p (the same in every block),
  // `skipped` not at all.
  enum class Mode : std::uint8_t { skipped, along, rows, fixed };
  struct Slot {
    const T* p = nullptr;
    std::int64_t stride = 0;
    Mode mode = Mode::skipped;
  };
  const ChainProgram& p_;
  const nn::detail::KernelTable<T>& kernels_;
  std::int64_t total_ = 0, width_ = 1, block_ = 1;
  boost::container::small_vector<Slot, 16> at_;
};

}  // namespace recur::scan_engine::detail::chain
