#pragma once
// The random numbers of the structure-aware mutators: splitmix64 and plain modulo, so that
// a libFuzzer seed replays the same mutation with any standard library (the <random>
// distributions are not specified bit for bit).
#include <cstddef>
#include <cstdint>

namespace recur::fuzz {

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : state_(seed) {}

  std::uint64_t next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // In [0, n); 0 when n is 0, so that callers need no special case for empty ranges.
  std::size_t below(std::size_t n) { return n == 0 ? 0 : static_cast<std::size_t>(next() % n); }
  int below(int n) { return n <= 0 ? 0 : static_cast<int>(next() % static_cast<std::uint64_t>(n)); }
  bool one_in(std::size_t n) { return below(n) == 0; }
  // An element of a non-empty container.
  template <class C>
  auto& pick(C& c) {
    return c[below(c.size())];
  }

 private:
  std::uint64_t state_;
};

}  // namespace recur::fuzz
