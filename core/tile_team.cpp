#include <recur/core/tile_team.hpp>

#include <algorithm>
#include <cstdint>
#include <atomic>
#include <chrono>
#include <mutex>
#include <system_error>
#include <thread>

#include <pthread.h>
#include <sched.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define RECUR_TILE_TEAM_X86 1
#endif

namespace recur::parallel {
namespace detail {
namespace {

void pause() {
#ifdef RECUR_TILE_TEAM_X86
  _mm_pause();
#else
  std::this_thread::yield();
#endif
}

// How long a helper spins for the next product before it sleeps: longer than the elementwise
// work between a step's products (tens of microseconds at the sizes that split), short
// enough that a helper does not keep a core from the whole-sequence products around the loop.
constexpr auto kSpin = std::chrono::microseconds(100);

using Clock = std::chrono::steady_clock;

// A wait for helpers this long means one was held off its core: a time slice is 1.5 ms and
// more on two cores; a tile of the products that share (at most 64 MFLOP in all, so at most
// 32 per tile of two) a few hundred microseconds; an interrupt or a page fault tens.
constexpr Clock::duration kHeldOff = std::chrono::milliseconds(1);
// How long products run alone after such a wait: at first, and at most (TileTeam::back_off_if_held).
constexpr Clock::duration kMinBackOff = std::chrono::milliseconds(20), kMaxBackOff = std::chrono::seconds(2);

// One job's state in one word, so that a claim sees a consistent job: the job's number (high
// 32 bits), then the ends of its unclaimed tiles [front, back) (16 bits each). The caller
// claims from the front and helpers from the back, so that on a quiet machine each thread
// runs nearly the same tiles at every step of a sequence and finds its share of the weights
// in its own core's cache (an LSTM's W_hh at M is 1 MB, a core's L2 holds 1 MB: claimed from
// one counter, the tiles and their columns of W_hh changed cores from step to step).
constexpr std::int64_t kMaxTiles = 0xffff;
constexpr std::uint64_t pack(std::uint32_t job, std::int64_t front, std::int64_t back) {
  return std::uint64_t{job} << 32 | static_cast<std::uint64_t>(front) << 16 | static_cast<std::uint64_t>(back);
}
constexpr std::uint32_t job_of(std::uint64_t w) { return static_cast<std::uint32_t>(w >> 32); }
constexpr std::int64_t front_of(std::uint64_t w) { return static_cast<std::int64_t>(w >> 16 & 0xffff); }
constexpr std::int64_t back_of(std::uint64_t w) { return static_cast<std::int64_t>(w & 0xffff); }

// The CPUs the calling thread may run on (helpers inherit its set), read once per thread.
int usable_cpus() {
  thread_local const int n = [] {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) != 0) return static_cast<int>(std::thread::hardware_concurrency());
    return CPU_COUNT(&set);
  }();
  return std::max(1, n);
}

// The caller's floating-point control word (rounding, flush-to-zero), for a helper to take:
// a tile's bits must not depend on which thread ran it.
unsigned float_control() {
#ifdef RECUR_TILE_TEAM_X86
  return _mm_getcsr();
#else
  return 0;
#endif
}
void set_float_control([[maybe_unused]] unsigned control) {
#ifdef RECUR_TILE_TEAM_X86
  if (_mm_getcsr() != control) _mm_setcsr(control);
#endif
}

// One per process, never destroyed: its helpers are detached and may still spin or sleep
// while the process exits (joining them at exit would block a forked child, which has none;
// a forked child starts helpers of its own).
class TileTeam {
 public:
  TileTeam() {
    pthread_atfork(nullptr, nullptr, [] { team_after_fork(); });
  }
  static void team_after_fork();

  int helpers() {
    std::lock_guard lock(submit_);
    return helpers_;
  }
  std::uint32_t jobs() const { return job_of(work_.load()); }
  std::uint64_t helper_tiles() const { return helper_tiles_.load(); }
  void set_helpers_claim_first(bool on) { helpers_claim_first_.store(on); }
  void park() noexcept { parked_.store(true, std::memory_order_relaxed); }
  void set_spin(std::chrono::microseconds spin) { spin_.store(spin.count() > 0 ? Clock::duration(spin) : kSpin); }
  int sleepers() const { return sleepers_.load(); }
  void forget_back_off() {
    std::lock_guard lock(submit_);
    alone_until_ = last_held_ = {};
    back_off_ = {};
  }

  void run(std::int64_t tiles, int threads, bool back_off, TileFn fn, const void* context) {
    int want = static_cast<int>(std::min<std::int64_t>({threads, tiles, usable_cpus()})) - 1;
    auto alone = [&] {
      for (std::int64_t k = 0; k < tiles; ++k) fn(context, k);
    };
    if (want <= 0 || tiles > kMaxTiles) return alone();  // nothing to share: no lock taken
    // Alone too while the team is busy with another caller's product, or helpers were held
    // off their cores lately.
    std::unique_lock lock(submit_, std::try_to_lock);
    if (!lock.owns_lock() || (back_off && backing_off())) return alone();
    while (helpers_ < want && !cannot_start_) {
      const int index = helpers_;
      const std::uint32_t last_job = job_of(work_.load());  // the helper joins the next one, this caller's
      try {
        std::thread([this, index, last_job] { help(index, last_job); }).detach();
        ++helpers_;
      } catch (const std::system_error&) {  // no more threads to be had: share with those there are
        cannot_start_ = true;
      }
    }
    want = std::min(want, helpers_);
    // Publish: the fields first, then the word that names the job (a helper reads the fields
    // after it saw the word; it claims a tile only while the word still names this job).
    const std::uint32_t job = job_of(work_.load()) + 1;
    fn_.store(fn, std::memory_order_relaxed);
    context_.store(context, std::memory_order_relaxed);
    float_control_.store(float_control(), std::memory_order_relaxed);
    wanted_.store(want, std::memory_order_relaxed);
    done_.store(0, std::memory_order_relaxed);
    parked_.store(false, std::memory_order_relaxed);
    work_.store(pack(job, 0, tiles));
    if (sleepers_.load() > 0) {
      bell_.fetch_add(1);
      bell_.notify_all();
    }
    if (helpers_claim_first_.load(std::memory_order_relaxed)) await_a_helper_claim(job, tiles);
    const auto start = Clock::now();
    run_claimed(job, fn, context, nullptr, Side::front);
    // The helpers' tiles in flight. Every tile is claimed by now, so no helper starts another.
    const auto own = Clock::now();
    for (int spins = 0; done_.load(std::memory_order_acquire) < tiles; ++spins) {
      if (spins < 4096) pause();
      else std::this_thread::yield();
    }
    const auto end = Clock::now();
    if (back_off) back_off_if_held(end, own - start, end - own);
  }

 private:
  // A helper that another process holds off its core mid-tile holds up the caller until it
  // runs again (a time slice: milliseconds; the tile's operands must stay valid until it
  // ends, so the caller cannot take it back). When the caller waited that long, and longer
  // than its own share took, the machine is busy: products run alone for the next 20 ms,
  // twice as long after each further such wait within four such periods (up to 2 s), 20 ms
  // again after a quiet spell. Measured on a busy machine (one CPU-bound process beside the
  // RNN suite's M), this keeps a step near the time it takes alone; quiet, nearly every
  // product is shared. Timed, not counted: a small product (the RNN's) comes ten times as
  // often as a large one.
  void back_off_if_held(Clock::time_point now, Clock::duration own, Clock::duration waited) {
    if (waited <= std::max<Clock::duration>(own, kHeldOff)) return;
    back_off_ = now - last_held_ < 4 * back_off_ ? std::min<Clock::duration>(2 * back_off_, kMaxBackOff) : kMinBackOff;
    last_held_ = now;
    alone_until_ = now + back_off_;
  }

  // set_helpers_claim_first's wait: until a tile of job `job` (of `tiles`) is claimed, for at most 10 s.
  void await_a_helper_claim(std::uint32_t job, std::int64_t tiles) const {
    const auto start = Clock::now();
    auto claimed = [&] {
      const std::uint64_t w = work_.load(std::memory_order_acquire);
      return job_of(w) != job || back_of(w) < tiles;
    };
    while (!claimed() && Clock::now() - start < std::chrono::seconds(10)) std::this_thread::yield();
  }

  bool backing_off() const { return alone_until_ > Clock::time_point() && Clock::now() < alone_until_; }

  enum class Side { front, back };
  // Claims and runs tiles of job `job` from `side` until none is left; counts them into `ran` (if given).
  void run_claimed(std::uint32_t job, TileFn fn, const void* context, std::atomic<std::uint64_t>* ran, Side side) {
    std::uint64_t w = work_.load(std::memory_order_acquire);
    for (;;) {
      if (job_of(w) != job) return;
      const std::int64_t front = front_of(w), back = back_of(w);
      if (front >= back) return;
      const bool at_front = side == Side::front;
      const std::uint64_t claimed = at_front ? w + (std::uint64_t{1} << 16) : w - 1;
      if (!work_.compare_exchange_weak(w, claimed, std::memory_order_acq_rel)) continue;
      fn(context, at_front ? front : back - 1);
      if (ran) ran->fetch_add(1, std::memory_order_relaxed);
      done_.fetch_add(1, std::memory_order_release);
      w = work_.load(std::memory_order_acquire);
    }
  }

  // Helper `index`: waits for a job after `seen`, joins it if the job wants that many helpers
  // (one that does not sleeps at once after it, rather than spin for the next).
  void help(int index, std::uint32_t seen) {
    bool joined = true;
    for (;;) {
      await_job(seen, joined);
      seen = job_of(work_.load());
      joined = index < wanted_.load(std::memory_order_relaxed);
      if (!joined) continue;
      set_float_control(float_control_.load(std::memory_order_relaxed));
      run_claimed(seen, fn_.load(std::memory_order_relaxed), context_.load(std::memory_order_relaxed), &helper_tiles_,
                  Side::back);
    }
  }

  // Until a job after `seen` is published: spins for kSpin (with `spin`), then sleeps on the bell.
  void await_job(std::uint32_t seen, bool spin) {
    auto fresh = [&] { return job_of(work_.load()) != seen; };
    const auto until = Clock::now() + spin_.load(std::memory_order_relaxed);
    for (int i = 0; spin; ++i) {
      if (fresh()) return;
      if (parked_.load(std::memory_order_relaxed)) break;
      if ((i & 63) == 63 && Clock::now() > until) break;
      pause();
    }
    while (!fresh()) {
      const std::uint32_t bell = bell_.load();
      sleepers_.fetch_add(1);
      // Checked after the count went up: run() either sees this sleeper and rings, or it
      // published before this check.
      if (!fresh()) bell_.wait(bell);
      sleepers_.fetch_sub(1);
    }
  }

  std::mutex submit_;  // one job at a time; held by its caller while it runs
  // back_off_if_held's (under submit_): run alone until alone_until_.
  Clock::time_point alone_until_{}, last_held_{};
  Clock::duration back_off_{};
  int helpers_ = 0;            // started so far (under submit_)
  bool cannot_start_ = false;  // starting one failed (under submit_)
  std::atomic<std::uint64_t> work_{0};
  std::atomic<TileFn> fn_{nullptr};
  std::atomic<const void*> context_{nullptr};
  std::atomic<int> wanted_{0};
  std::atomic<std::int64_t> done_{0};
  std::atomic<int> sleepers_{0};
  std::atomic<std::uint32_t> bell_{0};
  std::atomic<unsigned> float_control_{0};
  std::atomic<std::uint64_t> helper_tiles_{0};  // tiles the helpers ran, for tests
  std::atomic<bool> helpers_claim_first_{false};  // tests: set_helpers_claim_first
  std::atomic<bool> parked_{false};               // park_helpers: spinning helpers sleep; run() clears it
  std::atomic<Clock::duration> spin_{kSpin};     // tests: set_helper_spin
};

TileTeam& team() {
  static TileTeam* t = new TileTeam;
  return *t;
}

// In a forked child only the forking thread lives: the team has no helpers and no sleepers.
// (A child forked while another thread held submit_ finds it held and runs alone.)
void TileTeam::team_after_fork() {
  TileTeam& t = team();
  t.helpers_ = 0;
  t.cannot_start_ = false;
  t.sleepers_.store(0);
}

}  // namespace

void run_tiles(std::int64_t tiles, int threads, bool back_off, TileFn fn, const void* context) {
  if (tiles <= 0) return;
  team().run(tiles, threads, back_off, fn, context);
}

void park_helpers() noexcept { team().park(); }
void set_helper_spin(std::chrono::microseconds spin) { team().set_spin(spin); }
void forget_back_off() { team().forget_back_off(); }
void set_helpers_claim_first(bool on) { team().set_helpers_claim_first(on); }

}  // namespace detail

int tile_team_cpus() { return detail::usable_cpus(); }
int tile_team_helpers() { return detail::team().helpers(); }
std::uint32_t tile_team_jobs() { return detail::team().jobs(); }
std::uint64_t tile_team_helper_tiles() { return detail::team().helper_tiles(); }
int tile_team_sleeping_helpers() { return detail::team().sleepers(); }

}  // namespace recur::parallel
