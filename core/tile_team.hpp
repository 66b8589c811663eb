#pragma once
// Splits one small product's tiles (a per-step recurrent product: tens of microseconds of
// work, thousands of times per sequence) over the calling thread and helper threads that stay
// awake between products. Starting threads per call (parallel::for_each_task), or waking an
// OpenMP team that slept (OMP_WAIT_POLICY=PASSIVE), costs about what such a product saves;
// helpers that spin for a while after each product are there for the next step's.
//
// The caller claims tiles from the front of the same range the helpers claim from the back: a
// helper that another process holds off its core delays only the tile it is running, never
// the tiles it has not claimed; on a quiet machine each thread runs nearly the same tiles at
// every step, and finds their columns of the weights in its own core's cache.
// Which thread runs a tile never changes its result. While another thread's product holds the
// team, a caller runs all its tiles alone.
#include <chrono>
#include <cstdint>

namespace recur::parallel {

namespace detail {
using TileFn = void (*)(const void* context, std::int64_t tile) noexcept;
void run_tiles(std::int64_t tiles, int threads, bool back_off, TileFn fn, const void* context);
// Tells the helpers that spin for the next product to sleep now: the caller is about to run
// work on other threads of its own (OpenBLAS's team, for_each_task's threads), which a
// spinning helper would share a core with. The next product wakes them.
void park_helpers() noexcept;
// Forgets that helpers were held off (tests: each starts from a team that shares).
void forget_back_off();
// Tests: with `on`, a shared product's caller claims no tile before a helper has claimed one
// (or 10 s passed), so that a test of shared bits sees a helper's tiles however loaded the
// machine is. Off by default: callers never wait for a helper.
void set_helpers_claim_first(bool on);
// Tests: how long helpers spin for the next product before they sleep (kSpin in tile_team.cpp
// by default; a zero duration restores it).
void set_helper_spin(std::chrono::microseconds spin);
}  // namespace detail

// Calls tile(k) for every k in [0, tiles) on up to `threads` threads (the caller's among
// them), each k once; returns when all are done. `tile` must not throw (a throw ends the
// process: helpers may still be running other tiles on its operands). With `back_off`, the
// products after a helper was held off its core run alone for a while (tile_team.cpp);
// without, every product is shared.
template <class F>
void for_each_tile(std::int64_t tiles, int threads, const F& tile, bool back_off = true) {
  detail::run_tiles(tiles, threads, back_off,
                    [](const void* context, std::int64_t k) noexcept { (*static_cast<const F*>(context))(k); }, &tile);
}

// Calls f(tile, begin, end) for `tiles` fixed ranges that cover [0, count) in order, tile t
// the t-th, on up to `tiles` threads (the caller's among them): what each range holds never
// depends on which thread runs it. f must not throw.
template <class F>
void for_each_range(std::int64_t count, std::int64_t tiles, const F& f, bool back_off = true) {
  if (tiles <= 1) return f(std::int64_t{0}, std::int64_t{0}, count);
  for_each_tile(tiles, static_cast<int>(tiles), [&](std::int64_t t) { f(t, t * count / tiles, (t + 1) * count / tiles); },
                back_off);
}

// The CPUs the calling thread may run on (its affinity, as OMP_PROC_BIND or taskset set it):
// a product shares its tiles with at most this many threads less one.
int tile_team_cpus();

// Helper threads the team has started so far (tests: they are made on first use), the
// products it has shared with them (modulo 2^32), and the tiles the helpers ran.
int tile_team_helpers();
std::uint32_t tile_team_jobs();
std::uint64_t tile_team_helper_tiles();
// Tests: helpers asleep until the next product.
int tile_team_sleeping_helpers();

}  // namespace recur::parallel
