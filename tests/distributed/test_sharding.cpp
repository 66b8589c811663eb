// Sharding: contiguous stream blocks, and DistributedSampler's per-rank indices against
// the permutation one process draws (with padding and drop_last). No communication.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include <recur/distributed/sharding.hpp>

#include "models.hpp"

namespace recur::distributed::testing {
namespace {

TEST(Sharding, EachRankOwnsAContiguousBlockOfStreams) {
  Generator gen(1);
  const Tensor streams = normal({5, 6, 2}, 0, 1, gen, f64);
  for (int r = 0; r < 3; ++r) {
    const Tensor mine = shard_streams(streams, 1, r, 3);
    ASSERT_EQ(mine.shape(), (Shape{5, 2, 2}));
    for (std::int64_t t = 0; t < 5; ++t)
      for (std::int64_t b = 0; b < 2; ++b)
        for (std::int64_t f = 0; f < 2; ++f) EXPECT_EQ(mine.at({t, b, f}), streams.at({t, 2 * r + b, f}));
  }
  EXPECT_THROW(shard_streams(streams, 1, 0, 4), ValueError);  // 6 streams, 4 ranks
  EXPECT_THROW(shard_streams(streams, 3, 0, 2), AxisError);
  EXPECT_THROW(shard_range(6, 2, 2), ValueError);
}

TEST(Sharding, PermutationIsAPermutationFixedBySeed) {
  const std::vector<std::int64_t> p = permutation(100, 9), q = permutation(100, 9), other = permutation(100, 10);
  EXPECT_EQ(p, q);
  EXPECT_NE(p, other);
  std::vector<std::int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (std::int64_t i = 0; i < 100; ++i) EXPECT_EQ(sorted[static_cast<std::size_t>(i)], i);
}

TEST(DistributedSampler, RanksInterleaveOnePermutationAndPadFromItsStart) {
  const std::int64_t n = 11;
  DistributedSampler one(n, 0, 1, {.seed = 3});
  one.set_epoch(2);
  const std::vector<std::int64_t> all = one.indices();
  EXPECT_EQ(all, permutation(n, 5));  // seed + epoch
  std::vector<std::vector<std::int64_t>> ranks;
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(n, r, 3, {.seed = 3});
    s.set_epoch(2);
    ranks.push_back(s.indices());
    EXPECT_EQ(s.size(), 4);
    ASSERT_EQ(ranks.back().size(), 4u);
  }
  for (std::size_t i = 0; i < 12; ++i) EXPECT_EQ(ranks[i % 3][i / 3], all[i % 11]) << i;  // 12th: padding
  DistributedSampler dropping(n, 2, 3, {.shuffle = false, .drop_last = true});
  EXPECT_EQ(dropping.indices(), (std::vector<std::int64_t>{2, 5, 8}));
  EXPECT_THROW(DistributedSampler(2, 0, 3, {.drop_last = true}), ValueError);
  EXPECT_THROW(DistributedSampler(5, 3, 3), ValueError);
}

TEST(DistributedSampler, APositionMeansTheSameOnAnyNumberOfRanks) {
  DistributedSampler one(12, 0, 1, {.seed = 4});
  const std::vector<std::int64_t> all = one.indices();
  one.set_position(6);
  EXPECT_EQ(one.indices(), std::vector<std::int64_t>(all.begin() + 6, all.end()));
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(12, r, 3, {.seed = 4});
    s.set_position(6);  // two of each rank's four taken
    EXPECT_EQ(s.indices(), (std::vector<std::int64_t>{all[static_cast<std::size_t>(6 + r)], all[static_cast<std::size_t>(9 + r)]}));
    s.set_epoch(1);
    EXPECT_EQ(s.position(), 0);
    EXPECT_THROW(s.set_position(4), ValueError);  // not a multiple of 3
  }
}

}  // namespace
}  // namespace recur::distributed::testing
