#pragma once
// Reproducible random tensors. Generator is Philox4x32-10 (core/philox.hpp), a
// counter-based generator: its whole state is a 64-bit key (the seed) and a position in
// the stream, so a state is four int64 words, restoring one is free and skipping ahead n
// draws is an addition. Raw draws are 64-bit: Philox runs with the seed as key (key word 0
// its low 32 bits) on counter b, the block number (128 bits, word 0 the lowest), and raw
// draw 2b is words 1:0 of its output (word 1 the high half), draw 2b + 1 words 3:2.
// The std:: distributions are implementation-defined, so uniforms are built from the raw
// bits here instead: a seed gives the same uniform and bernoulli tensors with every
// compiler and standard library (normals go through log, sin and cos, so they match
// wherever libm rounds those the same way).
//
// Elements are drawn in row-major order: one raw draw per element for uniform and
// bernoulli, two per pair of elements for normal (an odd last element still takes two).
// Bad arguments throw before anything is drawn, so a failed call leaves the generator
// where it was.
#include <array>
#include <cstdint>
#include <span>

#include <recur/core/philox.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

class Generator {
 public:
  // The stream of key `seed` from its start.
  explicit Generator(std::uint64_t seed) : key_(seed) {}

  // The next raw 64-bit draw.
  std::uint64_t next_u64() {
    const unsigned half = position_[0] & 1;
    if (half == 0 || !block_ready_) {
      block_ = block_draws(key_, position_);
      block_ready_ = true;
    }
    if (++position_[0] == 0) ++position_[1];
    return block_[half];
  }
  // Uniform in [0, 1): the top 53 bits of one draw, scaled exactly.
  double next_double() { return unit_double(next_u64()); }
  // Uniform in [0, 1): the top 24 bits of one draw, scaled exactly.
  float next_float() { return unit_float(next_u64()); }
  static double unit_double(std::uint64_t raw) { return static_cast<double>(raw >> 11) * 0x1.0p-53; }
  static float unit_float(std::uint64_t raw) { return static_cast<float>(raw >> 40) * 0x1.0p-24f; }

  // The next out.size() raw draws, as next_u64() would give them one by one, faster: whole
  // blocks are independent Philox evaluations, which the processor overlaps.
  void fill(std::span<std::uint64_t> out);
  // Skips `n` raw draws at once: the same as calling next_u64() n times.
  void discard(std::uint64_t n);

  // The state as a 1-d int64 tensor of 4 words: a tag naming the format, the key, and the
  // position (the count of raw draws made since the seed, 128 bits, low word first). To be
  // saved in a checkpoint: set_state(state()) continues the same stream bit-exactly, on any
  // build.
  Tensor state() const;
  // Throws DTypeError / ShapeError when `state` is not an int64 tensor of shape [4]
  // (states of recur's earlier mt19937_64 Generator were longer and cannot be continued),
  // ValueError when its tag is not this format's; the generator is unchanged then.
  void set_state(const Tensor& state);

  // The same stream at the same position.
  friend bool operator==(const Generator& a, const Generator& b) {
    return a.key_ == b.key_ && a.position_ == b.position_;
  }

 private:
  using Position = std::array<std::uint64_t, 2>;  // 128 bits, low word first
  // The two raw draws of the Philox block that holds draw `position` (block = position / 2).
  static std::array<std::uint64_t, 2> block_draws(std::uint64_t key, const Position& position) {
    const std::uint64_t lo = (position[0] >> 1) | (position[1] << 63), hi = position[1] >> 1;
    auto word = [](std::uint64_t v, int at) { return static_cast<std::uint32_t>(v >> at); };
    const detail::PhiloxCounter w =
        detail::philox4x32_10({word(lo, 0), word(lo, 32), word(hi, 0), word(hi, 32)}, {word(key, 0), word(key, 32)});
    return {w[0] | std::uint64_t{w[1]} << 32, w[2] | std::uint64_t{w[3]} << 32};
  }

  std::uint64_t key_;
  Position position_{};                   // raw draws made
  std::array<std::uint64_t, 2> block_{};  // the draws of the block position_ is in, once computed
  bool block_ready_ = false;              // false: position_ moved to another block unseen
};

// Elements uniform in [lo, hi) (all equal to lo when lo == hi); float32 or float64.
// The value is lo + (hi - lo) * u with u = gen.next_float() for float32 and
// gen.next_double() for float64, computed in double and rounded to the dtype.
Tensor uniform(const Shape& shape, double lo, double hi, Generator& gen, DType dtype = DType::float32);
// Elements from N(mean, std^2), by the Box-Muller transform in double; float32 or float64.
Tensor normal(const Shape& shape, double mean, double std, Generator& gen, DType dtype = DType::float32);
// Elements 1 with probability p and 0 otherwise (u < p with u = gen.next_double()); any dtype.
Tensor bernoulli(const Shape& shape, double p, Generator& gen, DType dtype = DType::float32);
// Element i is 1 with probability p[i]; same shape and dtype as p (float32 or float64).
Tensor bernoulli(const Tensor& p, Generator& gen);

}  // namespace recur
