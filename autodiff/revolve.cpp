#include <recur/autodiff/revolve.hpp>

#include <recur/core/error.hpp>

namespace recur::revolve {
namespace {

void check(std::string_view op, std::int64_t steps, std::int64_t snapshots) {
  if (steps < 0) fail<ValueError>(op, "steps = ", steps, " is negative");
  if (snapshots < 1) fail<ValueError>(op, "snapshots = ", snapshots, "; reversing needs at least 1 (the start)");
}

// a * b, or a ValueError naming the schedule when the count passes int64.
std::int64_t times(std::int64_t a, std::int64_t b, std::int64_t steps, std::int64_t snapshots) {
  std::int64_t out = 0;
  if (__builtin_mul_overflow(a, b, &out))
    fail<ValueError>("revolve", "a schedule of ", steps, " steps with ", snapshots,
                     " snapshots counts more advances than an int64 holds");
  return out;
}

// r*T - C(s+r, s+1) without a table: C(s+r, s) grows with r until it covers T.
std::int64_t advances(std::int64_t steps, std::int64_t snapshots) {
  if (steps <= 1) return 0;
  if (snapshots == 1) return times(steps, steps - 1, steps, snapshots) / 2;  // from the start every time
  if (snapshots >= steps) return steps - 1;                                  // r = 1
  std::int64_t r = 0, covered = 1;                                           // covered = C(s+r, s)
  while (covered < steps) {
    ++r;
    covered = times(covered, snapshots + r, steps, snapshots) / r;
  }
  // C(s+r, s+1) = C(s+r, s) * r / (s+1)
  return times(r, steps, steps, snapshots) - times(covered, r, steps, snapshots) / (snapshots + 1);
}

class Builder {
 public:
  std::vector<Action> actions;

  // Precondition: the current state is `lo`, held as a snapshot; `c` snapshots are ours.
  void reverse(std::int64_t lo, std::int64_t hi, std::int64_t c) {
    if (hi - lo == 1) return turn(lo);
    if (c == 1) {
      for (std::int64_t t = hi - 1; t >= lo; --t) {
        if (t != hi - 1) actions.push_back({ActionKind::restore, lo, lo});
        if (t > lo) actions.push_back({ActionKind::advance, lo, t});
        turn(t);
      }
      return;
    }
    const std::int64_t mid = lo + split(hi - lo, c);
    actions.push_back({ActionKind::advance, lo, mid});
    actions.push_back({ActionKind::snapshot, mid, mid});
    reverse(mid, hi, c - 1);
    actions.push_back({ActionKind::discard, mid, mid});
    actions.push_back({ActionKind::restore, lo, lo});
    reverse(lo, mid, c);
  }

 private:
  void turn(std::int64_t t) {
    actions.push_back({first_ ? ActionKind::first_reverse : ActionKind::reverse, t, t + 1});
    first_ = false;
  }
  bool first_ = true;
};

}  // namespace

std::int64_t minimal_advances(std::int64_t steps, std::int64_t snapshots) {
  check("revolve::minimal_advances", steps, snapshots);
  return advances(steps, snapshots);
}

std::int64_t split(std::int64_t steps, std::int64_t snapshots) {
  if (steps < 2 || snapshots < 2)
    fail<ValueError>("revolve::split", "steps = ", steps, ", snapshots = ", snapshots, "; both must be >= 2");
  // Any m with m + F(T-m, s-1) + F(m, s) = F(T, s) is optimal; the largest keeps the
  // snapshot nearest the end, which shortens the first sweep's walk back.
  const std::int64_t best = advances(steps, snapshots);
  for (std::int64_t m = steps - 1; m >= 1; --m)
    if (m + advances(steps - m, snapshots - 1) + advances(m, snapshots) == best) return m;
  fail<Error>("revolve::split", "no optimal split for ", steps, " steps and ", snapshots, " snapshots");
}

std::vector<std::int64_t> forward_snapshots(std::int64_t steps, std::int64_t snapshots) {
  check("revolve::forward_snapshots", steps, snapshots);
  std::vector<std::int64_t> at;
  for (std::int64_t lo = 0, c = snapshots; steps - lo > 1 && c > 1; --c) {
    lo += split(steps - lo, c);
    at.push_back(lo);
  }
  return at;
}

std::string to_string(const Action& a) {
  switch (a.kind) {
    case ActionKind::advance: return "advance " + std::to_string(a.from) + "->" + std::to_string(a.to);
    case ActionKind::snapshot: return "snapshot " + std::to_string(a.from);
    case ActionKind::restore: return "restore " + std::to_string(a.from);
    case ActionKind::discard: return "discard " + std::to_string(a.from);
    case ActionKind::first_reverse: return "first_reverse " + std::to_string(a.from);
    case ActionKind::reverse: return "reverse " + std::to_string(a.from);
  }
  return "?";
}

std::vector<Action> schedule(std::int64_t steps, std::int64_t snapshots) {
  check("revolve::schedule", steps, snapshots);
  Builder b;
  b.actions.push_back({ActionKind::snapshot, 0, 0});
  if (steps > 0) b.reverse(0, steps, snapshots);
  return b.actions;
}

}  // namespace recur::revolve
