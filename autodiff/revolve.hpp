#pragma once
// Binomial checkpointing (Griewank and Walther, "Algorithm 799: revolve", ACM TOMS 2000):
// how to reverse a chain of T steps holding at most s states ("snapshots", the start
// included) with the fewest recomputed steps. Pure functions, no tensors: the tape's
// recomputation (autodiff/recompute.cpp) follows them, and tests check them on their own.
//
// Vocabulary: state p is the input of step p (state 0 is the chain's start, always held).
// Reversing step t needs state t and step t run again with its intermediate values kept.
#include <cstdint>
#include <string>
#include <vector>

namespace recur::revolve {

// The fewest forward steps that reversing `steps` steps from a held state with `snapshots`
// snapshots (that state's included) must run without keeping their intermediates:
// r*T - C(s+r, s+1), r the smallest integer with C(s+r, s) >= T. In recur's loops, whose
// forward pass already ran every step once, this is the number of steps backward replays.
std::int64_t minimal_advances(std::int64_t steps, std::int64_t snapshots);

// Where the optimal schedule takes its next snapshot when it must reverse `steps` (>= 2)
// steps from a held state with `snapshots` (>= 2) snapshots: that many steps further on.
std::int64_t split(std::int64_t steps, std::int64_t snapshots);

// The states the first forward sweep snapshots, in order (state 0 not listed).
std::vector<std::int64_t> forward_snapshots(std::int64_t steps, std::int64_t snapshots);

enum class ActionKind {
  advance,        // run steps [from, to) from the current state, keeping only the state
  snapshot,       // keep the current state, at `from`
  restore,        // make snapshot `from` the current state
  discard,        // free snapshot `from`
  first_reverse,  // run step `from` keeping its intermediates and reverse it: the first one
  reverse,        // likewise for every later step
};
struct Action {
  ActionKind kind;
  std::int64_t from = 0, to = 0;
  bool operator==(const Action&) const = default;
};
std::string to_string(const Action& a);

// The whole optimal schedule, starting with snapshot(0). Its advances sum to
// minimal_advances(steps, snapshots); it never holds more than `snapshots` snapshots.
// steps >= 0 and snapshots >= 1, else ValueError.
std::vector<Action> schedule(std::int64_t steps, std::int64_t snapshots);

}  // namespace recur::revolve
