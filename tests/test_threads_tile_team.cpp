// The tile team (core/tile_team.hpp): every tile of every product runs once, whichever
// threads take part, with helpers that sleep and wake between products, and with two callers
// at once (one of them runs alone). Built under ThreadSanitizer too (test_threads*).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <recur/core/tile_team.hpp>

#include "step_gemm_scope.hpp"

namespace recur {
namespace {

// Runs `tiles` tiles on `threads` threads and checks that each ran exactly once.
void expect_each_tile_once(std::int64_t tiles, int threads) {
  std::vector<std::atomic<int>> runs(static_cast<std::size_t>(tiles));
  parallel::for_each_tile(tiles, threads, [&](std::int64_t k) { runs[static_cast<std::size_t>(k)].fetch_add(1); });
  for (std::int64_t k = 0; k < tiles; ++k)
    ASSERT_EQ(runs[static_cast<std::size_t>(k)].load(), 1) << "tile " << k << " of " << tiles << " on " << threads << " threads";
}

// Spins for `d`: a tile's work, on the core it has.
void work_for(std::chrono::microseconds d) {
  const auto until = std::chrono::steady_clock::now() + d;
  while (std::chrono::steady_clock::now() < until) {
  }
}

TEST(TileTeam, EveryTileRunsOnceOnAnyNumberOfThreads) {
  for (int round = 0; round < 50; ++round)
    for (std::int64_t tiles : {0, 1, 2, 3, 7, 16, 64, 257})
      for (int threads : {1, 2, 3, 5}) expect_each_tile_once(tiles, threads);
}

// Past the 65535 tiles one job's word holds: the caller runs them alone.
TEST(TileTeam, MoreTilesThanAJobHoldsRunAlone) {
  const std::uint32_t jobs = parallel::tile_team_jobs();
  expect_each_tile_once(70000, 2);
  EXPECT_EQ(parallel::tile_team_jobs(), jobs);
}

// Helpers that slept (no product for longer than they spin) wake for the next product.
TEST(TileTeam, HelpersWakeAfterSleeping) {
  for (int round = 0; round < 5; ++round) {
    expect_each_tile_once(32, 2);
    std::this_thread::sleep_for(std::chrono::milliseconds(3));
  }
}

// Before work on threads of its own (a large OpenBLAS product), a caller parks the helpers:
// they sleep at once instead of spinning on the cores that work needs (here they would spin
// for 10 s), and wake for the next product.
TEST(TileTeam, ParkedHelpersSleepAtOnceAndWakeForTheNextProduct) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const testing::LongHelperSpin long_spin;
  const testing::HelpersClaimFirst helpers_first;  // a helper joins every product
  for (int round = 0; round < 3; ++round) {
    const std::uint64_t before = parallel::tile_team_helper_tiles();
    expect_each_tile_once(16, 2);
    EXPECT_GT(parallel::tile_team_helper_tiles(), before) << "round " << round << ": no helper joined";
    EXPECT_FALSE(testing::helpers_asleep_within(std::chrono::milliseconds(200))) << "round " << round << ": helpers slept unparked";
    parallel::detail::park_helpers();
    EXPECT_TRUE(testing::helpers_asleep_within(std::chrono::seconds(5))) << "round " << round << ": parked helpers still spin";
  }
}

// Two callers at once: the one that does not get the team runs its tiles alone.
TEST(TileTeam, TwoCallersAtOnce) {
  auto work = [] {
    for (int round = 0; round < 300; ++round) expect_each_tile_once(24, 2);
  };
  std::thread other(work);
  work();
  other.join();
}

// A helper takes tiles: left to the timing, where tiles are long enough for it to wake (a
// loaded machine may keep it off its core for many products: tried for up to 10 s); and in
// every product where the caller waits for it (set_helpers_claim_first, as the shared-bits
// tests run).
TEST(TileTeam, HelpersTakeTiles) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const std::thread::id caller = std::this_thread::get_id();
  auto tiles_elsewhere = [&] {
    std::atomic<int> elsewhere{0};
    parallel::for_each_tile(16, 2, [&](std::int64_t) {
      work_for(std::chrono::microseconds(50));
      if (std::this_thread::get_id() != caller) elsewhere.fetch_add(1);
    }, /*back_off=*/false);
    return elsewhere.load();
  };
  bool helped = false;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!helped && std::chrono::steady_clock::now() < until) helped = tiles_elsewhere() > 0;
  EXPECT_TRUE(helped) << "no tile ran on a helper in 10 s of products of 16 tiles of 50 us";
  EXPECT_GE(parallel::tile_team_helpers(), 1);
  const testing::HelpersClaimFirst helpers_first;
  for (int round = 0; round < 20; ++round) EXPECT_GT(tiles_elsewhere(), 0) << "product " << round;
}

// The caller claims tiles from the front and helpers from the back, so that each thread runs
// nearly the same tiles at every step (and keeps their weights in its core's cache): the
// caller's tiles are a first run of tile numbers, a helper's the rest, with the last among them.
TEST(TileTeam, CallerTakesTheFirstTilesAndHelpersTheLast) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const testing::HelpersClaimFirst helpers_first;  // a helper's tiles in every product
  const std::thread::id caller = std::this_thread::get_id();
  for (int round = 0; round < 20; ++round) {
    constexpr std::int64_t kTiles = 16;
    std::vector<std::atomic<int>> by_caller(kTiles);
    parallel::for_each_tile(kTiles, 2, [&](std::int64_t k) {
      work_for(std::chrono::microseconds(20));
      by_caller[static_cast<std::size_t>(k)].store(std::this_thread::get_id() == caller ? 1 : 0);
    }, /*back_off=*/false);
    std::int64_t first_helped = 0;
    while (first_helped < kTiles && by_caller[static_cast<std::size_t>(first_helped)].load() == 1) ++first_helped;
    ASSERT_LT(first_helped, kTiles) << "product " << round << ": no helper ran the last tile";
    for (std::int64_t k = first_helped; k < kTiles; ++k)
      EXPECT_EQ(by_caller[static_cast<std::size_t>(k)].load(), 0)
          << "product " << round << ": the caller ran tile " << k << " after a helper's tile " << first_helped;
  }
}

// A helper held off for milliseconds mid-tile (here: the helper claims the first tile, which
// takes 20 ms, and the caller the other, 3 ms) makes the next products run alone; products
// that do not back off are still shared. (A loaded machine can hold the caller off instead:
// tried again.)
TEST(TileTeam, AHelperHeldOffMakesTheNextProductsRunAlone) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  struct Forget {  // before and after, also when an assertion leaves early
    Forget() { parallel::detail::forget_back_off(); }
    ~Forget() { parallel::detail::forget_back_off(); }
  } forget;
  const testing::HelpersClaimFirst helpers_first;  // the helper takes its slow tile however loaded the machine
  const std::thread::id caller = std::this_thread::get_id();
  bool backed_off = false;
  for (int round = 0; round < 100 && !backed_off; ++round) {
    parallel::for_each_tile(2, 2, [&](std::int64_t) {
      if (std::this_thread::get_id() == caller) work_for(std::chrono::microseconds(3000));
      else std::this_thread::sleep_for(std::chrono::milliseconds(20));
    });
    const std::uint32_t jobs = parallel::tile_team_jobs();
    expect_each_tile_once(8, 2);
    backed_off = parallel::tile_team_jobs() == jobs;
  }
  ASSERT_TRUE(backed_off) << "no product ran alone after a helper's slow tile, in 100 tries";
  const std::uint32_t jobs = parallel::tile_team_jobs();
  parallel::for_each_tile(8, 2, [](std::int64_t) {}, /*back_off=*/false);
  EXPECT_EQ(parallel::tile_team_jobs(), jobs + 1) << "a product that does not back off was not shared";
}

}  // namespace
}  // namespace recur
