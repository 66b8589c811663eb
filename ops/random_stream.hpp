#pragma once
// RandomStream: Theano's RandomStreams. A seeded stream of random tensors whose state (a
// core/random Generator's state) is a Shared int64 tensor, so that a scan can carry it:
//
//   RandomStream trng(1234);
//   auto r = scan([&](S a) { return trng.binomial(sigmoid(matmul(a[0], W))); }, {...});
//   apply_updates(r.updates);  // r.updates holds the stream's state after the last draw
//
// Inside a scan each draw records two nodes: the sample, computed from (state[, p]), and
// the advanced state, computed from the state. Both are pure functions of their inputs, so
// a scan checkpoint that recomputes them during backward gets the same draws bit for bit.
// Outside any scan a draw records the sample as a constant.
//
// Where the state goes:
// - inside a running scan, the draw reads the state as Var(state()) (the scan's latest
//   update of it) and the advanced state becomes an update of the innermost scan: the next
//   draw and the next iteration see it, the scan's updates map returns it, and the Shared
//   is unchanged until the caller applies the map. Calling the scan again without applying
//   gives the same draws (use a fresh Tape per call, as for every Shared: a tape reads a
//   Shared once). A nested scan hands its stream updates on to the enclosing scan.
// - outside any scan, the draw reads the Shared's current value and assigns the advanced
//   state to it at once: consecutive draws differ.
// Under a strict scan the step may draw only from a stream whose state was passed in
// non_sequences: pass Var(stream.state()).
//
// Samples are constants for autodiff: no gradient flows to p (nor to the state), and a
// sample does not require a gradient. The same draws come from core/random with one
// Generator: uniform(shape, lo, hi, gen, dtype), normal(...), bernoulli(p, gen).
// A stream is not for eager draws from several threads at once: give each thread its own.
#include <cstdint>
#include <optional>
#include <string>

#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/shape.hpp>

namespace recur {

class RandomStream {
 public:
  explicit RandomStream(std::uint64_t seed, std::string name = "random_stream");

  // The state (int64, Generator::state()'s shape); Generator::set_state(state().value())
  // continues the stream.
  const Shared& state() const { return state_; }
  // Restarts the stream from `seed` (assigns the state).
  void seed(std::uint64_t seed);

  // Elements uniform in [lo, hi), float32 or float64 (core/random's uniform).
  Var uniform(const Shape& shape, double lo = 0.0, double hi = 1.0, DType dtype = DType::float32);
  // Elements from N(mean, std^2), float32 or float64 (core/random's normal).
  Var normal(const Shape& shape, double mean = 0.0, double std = 1.0, DType dtype = DType::float32);
  // Theano's binomial(size=p.shape, n=1, p): element i is 1 with probability p[i] (float
  // p in [0, 1]), else 0; in `dtype`, p's dtype by default. No gradient flows to p.
  Var binomial(const Var& p, std::optional<DType> dtype = std::nullopt);
  // Elements counting successes in n trials of probability p each (any dtype); element
  // i uses n consecutive draws. n = 1 gives core/random's bernoulli(shape, p, gen, dtype).
  Var binomial(const Shape& shape, std::int64_t n, double p, DType dtype = DType::float32);

 private:
  Shared state_;
};

}  // namespace recur
