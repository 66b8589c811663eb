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
  ChainBlocks(const ChainProgram& p, const ChainLayout& layout, const InputList<Tensor>& inputs,
              const std::vector<std::uint8_t>* read = nullptr)
      : p_(p), layout_(layout), inputs_(inputs), skipped_(p.slots.size(), 0) {
    if (read)
      for (std::size_t j = 0; j < p.slots.size(); ++j) skipped_[j] = !(*read)[j];
    total_ = layout.total;
    width_ = layout.width;
    block_ = layout.block;
    // A repeated slot's block-sized copy lives in a thread's scratch (a chain runs at every
    // step, and allocating it would cost more).
    own_.assign(p.slots.size(), nullptr);
    std::size_t copies = 0;
    for (std::size_t j = 0; j < p.slots.size(); ++j) copies += !skipped_[j] && layout.repeated[j];
    if (copies == 0) return;
    T* next = scratch<T>(2, copies * static_cast<std::size_t>(block_));
    for (std::size_t j = 0; j < p.slots.size(); ++j) {
      if (skipped_[j] || !layout.repeated[j]) continue;
      const ChainSlot& slot = p.slots[j];
      const Tensor& in = inputs[slot.input];
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
  std::int64_t total() const { return total_; }
  std::int64_t block() const { return block_; }
  std::int64_t width() const { return width_; }
  std::int64_t blocks() const { return block_ > 0 ? (total_ + block_ - 1) / block_ : 0; }
  // How many tiles the blocks run in (blas::step_work_tiles: one per thread where a loop's
  // per-step work shares over recur's threads and the chain is large enough; else one).
  std::int64_t tiles() const { return blas::step_work_tiles(total_, blocks()); }
  // f(tile, index, begin, n) for every block of elements [begin, begin + n): tile t of `tiles`
  // runs a fixed run of blocks in order (so what a tile's scratch holds never depends on
  // timing), the tiles on recur's threads (blas::for_each_step_range). f must not throw or
  // allocate: it may run on a helper.
  template <class F>
  void each_block_in_tiles(std::int64_t tiles, F&& f) const {
    blas::for_each_step_range(blocks(), tiles, [&](std::int64_t t, std::int64_t first, std::int64_t end) {
      for (std::int64_t b = first; b < end; ++b) f(t, b, b * block_, std::min(block_, total_ - b * block_));
    });
  }

  // An operand's elements [begin, begin + n) (whole periods): `values(k)` gives instruction
  // k's, contiguous; a slot of columns gives its first row's and the input's row stride.
  template <class Values>
  Run<const T> operand(const ChainOperand& o, std::int64_t begin, Values&& values) const {
    if (!o.is_input) return {values(o.index)};
    if (skipped_[o.index]) return {};
    const ChainSlot& slot = p_.slots[o.index];
    const Tensor& in = inputs_[slot.input];
    if (layout_.strided[o.index]) {
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
  void run(std::int64_t begin, std::int64_t n, Values&& values) const {
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
  const ChainLayout& layout_;
  InputList<Tensor> inputs_;
  std::int64_t total_ = 0, width_ = 1, block_ = 1;
  boost::container::small_vector<T*, 32> own_;  // per slot: its repeats; nullptr: read in place
  Flags skipped_;                                // per slot: not read (backward, a sum's operand)
};

}  // namespace recur::scan_engine::detail::chain
