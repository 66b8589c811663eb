#pragma once
// The per-step products' backend (core/repeated_gemm.hpp) for one scope, then the process's
// choice again, also when a test's assertion leaves the scope early.
#include <chrono>
#include <cstdlib>
#include <string>
#include <thread>

#include <recur/core/blas.hpp>
#include <recur/core/blas_narrow_detail.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/core/tile_team.hpp>

// A test that needs a product's tiles shared with a helper: where this thread may run on one
// CPU only (OMP_PROC_BIND=true, taskset), the team shares with none, by design.
#define SKIP_UNLESS_TILES_CAN_BE_SHARED()                                                        \
  if (recur::parallel::tile_team_cpus() < 2)                                                     \
  GTEST_SKIP() << "this thread may run on one CPU only (its affinity: OMP_PROC_BIND, taskset), " \
                  "so no helper shares its products' tiles"

namespace recur::testing {

// Whether the kernels LIBXSMM_TARGET asks for (ctest runs these tests once per target) can
// run on this CPU: libxsmm makes what it is asked for.
inline bool target_runs_here() {
  const char* target = std::getenv("LIBXSMM_TARGET");
  if (!target) return true;
  __builtin_cpu_init();
  const std::string t = target;
  if (t == "hsw") return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
  if (t == "snb") return __builtin_cpu_supports("avx");
  if (t == "wsm") return __builtin_cpu_supports("sse4.2");
  return t == "generic";
}
#define SKIP_UNLESS_TARGET_RUNS_HERE()    \
  if (!recur::testing::target_runs_here()) \
  GTEST_SKIP() << "this CPU cannot run LIBXSMM_TARGET=" << std::getenv("LIBXSMM_TARGET")

struct UseStepGemm {
  explicit UseStepGemm(blas::StepGemm which) : before(blas::step_gemm()) { blas::set_step_gemm(which); }
  ~UseStepGemm() { blas::set_step_gemm(before); }
  UseStepGemm(const UseStepGemm&) = delete;
  UseStepGemm& operator=(const UseStepGemm&) = delete;
  blas::StepGemm before;
};

// Whether products share their tiles over threads, and recur's thread count, for one scope.
struct UseStepSplit {
  UseStepSplit(blas::StepSplit which, int threads) : before(blas::step_split()), threads_before(blas::num_threads()) {
    blas::set_step_split(which);
    blas::set_num_threads(threads);
  }
  ~UseStepSplit() {
    blas::set_step_split(before);
    blas::set_num_threads(threads_before);
  }
  UseStepSplit(const UseStepSplit&) = delete;
  UseStepSplit& operator=(const UseStepSplit&) = delete;
  blas::StepSplit before;
  int threads_before;
};

// A shared product's caller waits for a helper to claim a tile before it claims any, for one
// scope (parallel::detail::set_helpers_claim_first): with two CPU-bound test shards on two
// cores, a helper may otherwise stay off its core for every product of a test. The scope
// starts and ends with a team that shares (forget_back_off): a helper held off its core
// mid-tile in an earlier test would otherwise leave products running alone for a while.
struct HelpersClaimFirst {
  HelpersClaimFirst() {
    parallel::detail::forget_back_off();
    parallel::detail::set_helpers_claim_first(true);
  }
  ~HelpersClaimFirst() {
    parallel::detail::set_helpers_claim_first(false);
    parallel::detail::forget_back_off();
  }
  HelpersClaimFirst(const HelpersClaimFirst&) = delete;
  HelpersClaimFirst& operator=(const HelpersClaimFirst&) = delete;
};

// Helpers spin for 10 s after each shared piece of work, for one scope (a test of parking:
// only a park puts them to sleep within it). Parked on the way out, so that a test that
// leaves early does not leave them spinning into the next.
struct LongHelperSpin {
  LongHelperSpin() { parallel::detail::set_helper_spin(std::chrono::seconds(10)); }
  ~LongHelperSpin() {
    parallel::detail::set_helper_spin(std::chrono::microseconds(0));
    parallel::detail::park_helpers();
  }
  LongHelperSpin(const LongHelperSpin&) = delete;
  LongHelperSpin& operator=(const LongHelperSpin&) = delete;
};

// Whether every helper the team started sleeps within `limit`.
inline bool helpers_asleep_within(std::chrono::milliseconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (parallel::tile_team_sleeping_helpers() < parallel::tile_team_helpers())
    if (std::chrono::steady_clock::now() > until) return false;
    else std::this_thread::yield();
  return true;
}

// blas::gemm's row blocks (core/blas_narrow_detail.hpp) for one scope, then the default.
struct UseRowBlocks {
  explicit UseRowBlocks(blas::detail::RowBlocks which) { blas::detail::set_row_blocks(which); }
  ~UseRowBlocks() { blas::detail::set_row_blocks(blas::detail::RowBlocks::automatic); }
  UseRowBlocks(const UseRowBlocks&) = delete;
  UseRowBlocks& operator=(const UseRowBlocks&) = delete;
};

// blas::detail::set_chunk_rows for the scope (libxsmm's products made in it), then the default.
struct UseChunkRows {
  explicit UseChunkRows(std::int64_t rows) { blas::detail::set_chunk_rows(rows); }
  ~UseChunkRows() { blas::detail::set_chunk_rows(0); }
  UseChunkRows(const UseChunkRows&) = delete;
  UseChunkRows& operator=(const UseChunkRows&) = delete;
};

// Which kernel sets take blas::gemm's transposed form of narrow products, for one scope,
// then the default.
struct UseNarrowTransposed {
  explicit UseNarrowTransposed(blas::detail::NarrowTransposed which) { blas::detail::set_narrow_transposed(which); }
  ~UseNarrowTransposed() { blas::detail::set_narrow_transposed(blas::detail::NarrowTransposed::measured); }
  UseNarrowTransposed(const UseNarrowTransposed&) = delete;
  UseNarrowTransposed& operator=(const UseNarrowTransposed&) = delete;
};

}  // namespace recur::testing
