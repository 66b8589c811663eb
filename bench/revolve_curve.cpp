// recur_revolve_curve STEPS POLICY: one point of the memory/time curve of recomputation.
// The LSTM-like scan of lstm_recur.hpp over STEPS steps trains one step (forward, mean of
// every h, backward to Wx, Wh, b) with POLICY:
//   full     the full tape;
//   sqrt     Checkpoint::auto_sqrt() (every_k, k close to sqrt(STEPS));
//   sN       Checkpoint::snapshots(N): revolve with N snapshots.
// It prints one JSON line: the median time of the training step over a few runs, the
// bytes the tape holds for backward when forward ends (Tape::bytes_held), the process's
// peak resident set (one policy per process, so peaks never mix), and, for revolve, the
// steps backward replays (revolve::minimal_advances; tests/test_revolve.cpp counts them).
// scripts/revolve_curve.sh runs the whole curve and writes its table and SVG.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include <recur/autodiff/revolve.hpp>

#include "lstm_recur.hpp"
#include "memory_main.hpp"

namespace {

struct Policy {
  recur::Checkpoint checkpoint;
  std::int64_t snapshots = 0;  // revolve only
};

std::optional<Policy> parse_policy(const std::string& text) {
  if (text == "full") return Policy{recur::Checkpoint::none()};
  if (text == "sqrt") return Policy{recur::Checkpoint::auto_sqrt()};
  if (text.size() > 1 && text[0] == 's') {
    char* end = nullptr;
    const long s = std::strtol(text.c_str() + 1, &end, 10);
    if (*end == '\0' && s >= 1) return Policy{recur::Checkpoint::snapshots(s), s};
  }
  return std::nullopt;
}

}  // namespace

int main(int argc, char** argv) {
  const long steps = argc == 3 ? std::strtol(argv[1], nullptr, 10) : 0;
  const std::optional<Policy> policy = argc == 3 ? parse_policy(argv[2]) : std::nullopt;
  if (steps < 2 || !policy) {
    std::fprintf(stderr, "usage: %s STEPS full|sqrt|sN   (STEPS >= 2, N >= 1)\n", argv[0]);
    return 2;
  }
  bench::use_bench_threads();
  const std::int64_t rss_before = bench::proc_status_bytes("VmRSS");
  const bench::RecurLstm model(steps);
  std::size_t held = 0;
  std::vector<double> seconds;
  // 3 runs or more while they take under 10 s in all; fewer when they take over 30 s (the
  // slow revolve points at T = 10000 run once).
  double total = 0;
  while (seconds.empty() || (total < 30 && seconds.size() < 3) || (total < 10 && seconds.size() < 15)) {
    const auto start = std::chrono::steady_clock::now();
    model.step(policy->checkpoint, seconds.empty() ? &held : nullptr);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    total += seconds.back();
  }
  // The first run also walked the tape for bytes_held: leave it out when others exist.
  std::vector<double> timed(seconds.begin() + (seconds.size() > 1 ? 1 : 0), seconds.end());
  std::nth_element(timed.begin(), timed.begin() + timed.size() / 2, timed.end());
  const long long replayed = policy->snapshots ? recur::revolve::minimal_advances(steps, policy->snapshots) : -1;
  std::printf("{\"steps\": %ld, \"policy\": \"%s\", \"snapshots\": %lld, \"seconds\": %.6f, \"runs\": %zu, "
              "\"bytes_held\": %zu, \"rss_before_bytes\": %lld, \"peak_rss_bytes\": %lld, \"replayed_steps\": %lld}\n",
              steps, argv[2], static_cast<long long>(policy->snapshots), timed[timed.size() / 2], timed.size(), held,
              static_cast<long long>(rss_before), static_cast<long long>(bench::proc_status_bytes("VmHWM")), replayed);
  return 0;
}
