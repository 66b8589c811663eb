#pragma once
// Philox4x32-10 (Salmon, Moraes, Dror and Shaw, "Parallel random numbers: as easy as 1, 2,
// 3", SC 2011), the counter-based generator behind JAX's and PyTorch's GPU random numbers.
// Its output block is a keyed bijection of a 128-bit counter: a stream is a 64-bit key and
// a counter, and jumping ahead is adding to the counter. Random123's philox4x32 with 10
// rounds; tests/test_random.cpp checks Random123's known-answer vectors.
#include <array>
#include <cstdint>

namespace recur::detail {

using PhiloxCounter = std::array<std::uint32_t, 4>;  // word 0 the least significant
using PhiloxKey = std::array<std::uint32_t, 2>;

constexpr PhiloxCounter philox4x32_10(PhiloxCounter x, PhiloxKey key) {
  constexpr std::uint32_t kMul0 = 0xD2511F53, kMul1 = 0xCD9E8D57;    // the rounds' multipliers
  constexpr std::uint32_t kBump0 = 0x9E3779B9, kBump1 = 0xBB67AE85;  // the key schedule's increments
  for (int round = 0; round < 10; ++round) {
    if (round > 0) key = {key[0] + kBump0, key[1] + kBump1};
    const std::uint64_t p0 = std::uint64_t{kMul0} * x[0], p1 = std::uint64_t{kMul1} * x[2];
    x = {static_cast<std::uint32_t>(p1 >> 32) ^ x[1] ^ key[0], static_cast<std::uint32_t>(p1),
         static_cast<std::uint32_t>(p0 >> 32) ^ x[3] ^ key[1], static_cast<std::uint32_t>(p0)};
  }
  return x;
}

}  // namespace recur::detail
