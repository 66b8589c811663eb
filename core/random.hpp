#pragma once
// Reproducible random tensors. Generator wraps std::mt19937_64, whose raw 64-bit output the
// C++ standard fixes bit for bit. The std:: distributions are implementation-defined, so
// uniforms are built from the raw bits here instead: a seed gives the same uniform and
// bernoulli tensors with every compiler and standard library (normals go through log, sin
// and cos, so they match wherever libm rounds those the same way).
//
// Elements are drawn in row-major order: one raw draw per element for uniform and
// bernoulli, two per pair of elements for normal (an odd last element still takes two). Bad arguments throw before anything is drawn, so a
// failed call leaves the generator where it was.
#include <cstdint>
#include <random>

#include <recur/core/tensor.hpp>

namespace recur {

class Generator {
 public:
  explicit Generator(std::uint64_t seed) : engine_(seed) {}

  // The next raw 64-bit draw.
  std::uint64_t next_u64() { return engine_(); }
  // Uniform in [0, 1): the top 53 bits of one draw, scaled exactly.
  double next_double() { return static_cast<double>(engine_() >> 11) * 0x1.0p-53; }
  // Uniform in [0, 1): the top 24 bits of one draw, scaled exactly.
  float next_float() { return static_cast<float>(engine_() >> 40) * 0x1.0p-24f; }

  // The whole engine state as a 1-d int64 tensor (the bits of the unsigned words of the
  // standard library's text form of the engine), to be saved in a checkpoint:
  // set_state(state()) continues the same stream bit-exactly. A state moves between builds
  // that use the same C++ standard library (libstdc++ and libc++ lay it out differently).
  Tensor state() const;
  // Throws DTypeError / ShapeError when `state` is not an int64 tensor of state()'s shape,
  // ValueError when the engine rejects it; the generator is unchanged then.
  void set_state(const Tensor& state);

  friend bool operator==(const Generator&, const Generator&) = default;

 private:
  std::mt19937_64 engine_;
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
