// Revolve (binomial checkpointing): the schedule on its own (autodiff/revolve.hpp) against
// an independent count and a brute-force optimum, then scan with Checkpoint::snapshots and
// Checkpoint::budget: the steps backward actually replays (counted inside the step), the
// snapshots held, and gradients bit-identical to the full tape.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include <recur/autodiff/record.hpp>
#include <recur/autodiff/revolve.hpp>
#include <recur/autodiff/revolve_chain_detail.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "loop_node_scope.hpp"
#include "row_runs.hpp"

namespace recur {
namespace {

using S = std::span<const Var>;
using revolve::ActionKind;
using testing::same_bits;
constexpr DType f64 = DType::float64;

// ---- the schedule ---------------------------------------------------------------------------

// C(n, k) exactly, small enough arguments only.
std::int64_t binomial(std::int64_t n, std::int64_t k) {
  std::int64_t c = 1;
  for (std::int64_t i = 1; i <= k; ++i) c = c * (n - k + i) / i;
  return c;
}

// The paper's count, computed the plain way: r*T - C(s+r, s+1), r minimal with C(s+r, s) >= T.
std::int64_t formula(std::int64_t steps, std::int64_t s) {
  std::int64_t r = 0;
  while (binomial(s + r, s) < steps) ++r;
  return r * steps - binomial(s + r, s + 1);
}

// Brute force: the cheapest reversal of n steps from a held state with c snapshots.
std::int64_t brute_force(std::int64_t n, std::int64_t c, std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t>& memo) {
  if (n <= 1) return 0;
  if (c == 1) return n * (n - 1) / 2;
  auto [it, fresh] = memo.try_emplace({n, c}, 0);
  if (!fresh) return it->second;
  std::int64_t best = -1;
  for (std::int64_t m = 1; m < n; ++m) {
    const std::int64_t cost = m + brute_force(n - m, c - 1, memo) + brute_force(m, c, memo);
    if (best < 0 || cost < best) best = cost;
  }
  return memo[{n, c}] = best;
}

// Runs a schedule on a model of states: checks every action is possible when it comes, the
// steps are reversed T-1 down to 0 each once, and returns {advanced steps, peak snapshots}.
std::pair<std::int64_t, std::int64_t> simulate(const std::vector<revolve::Action>& actions, std::int64_t steps) {
  std::set<std::int64_t> held;
  std::int64_t current = 0, advanced = 0, peak = 0, next_reverse = steps - 1;  // the start is current
  for (const auto& a : actions) {
    switch (a.kind) {
      case ActionKind::snapshot:
        EXPECT_EQ(current, a.from) << to_string(a);
        held.insert(a.from);
        peak = std::max<std::int64_t>(peak, static_cast<std::int64_t>(held.size()));
        break;
      case ActionKind::restore:
        EXPECT_TRUE(held.count(a.from)) << to_string(a);
        current = a.from;
        break;
      case ActionKind::discard:
        EXPECT_TRUE(held.erase(a.from)) << to_string(a);
        break;
      case ActionKind::advance:
        EXPECT_EQ(current, a.from) << to_string(a);
        EXPECT_LT(a.from, a.to);
        advanced += a.to - a.from;
        current = a.to;
        break;
      case ActionKind::first_reverse:
      case ActionKind::reverse:
        EXPECT_EQ(a.kind == ActionKind::first_reverse, a.from == steps - 1) << to_string(a);
        EXPECT_EQ(current, a.from) << to_string(a);
        EXPECT_EQ(a.from, next_reverse) << to_string(a);
        --next_reverse;
        current = -1;
        break;
    }
  }
  EXPECT_EQ(next_reverse, -1);
  return {advanced, peak};
}

TEST(RevolveSchedule, AdvancesEqualTheFormulaAndTheBruteForceOptimum) {
  std::map<std::pair<std::int64_t, std::int64_t>, std::int64_t> memo;
  for (std::int64_t s = 1; s <= 10; ++s)
    for (std::int64_t t = 1; t <= 200; ++t) {
      const std::int64_t want = formula(t, s);
      ASSERT_EQ(revolve::minimal_advances(t, s), want) << "T = " << t << ", s = " << s;
      if (t <= 80 && s <= 6) {
        ASSERT_EQ(brute_force(t, s, memo), want) << "T = " << t << ", s = " << s;
      }
      const auto [advanced, peak] = simulate(revolve::schedule(t, s), t);
      ASSERT_EQ(advanced, want) << "T = " << t << ", s = " << s;
      ASSERT_LE(peak, s) << "T = " << t << ", s = " << s;
    }
  for (auto [t, s] : {std::pair<std::int64_t, std::int64_t>{1000, 2}, {1000, 10}, {10000, 5}, {10000, 100}}) {
    const auto [advanced, peak] = simulate(revolve::schedule(t, s), t);
    EXPECT_EQ(advanced, formula(t, s)) << "T = " << t << ", s = " << s;
    EXPECT_LE(peak, s);
  }
}

TEST(RevolveSchedule, SmallCasesByHand) {
  // One snapshot (the start): step t is reached by t advances, 0 + 1 + 2 = 3 for T = 3.
  EXPECT_EQ(revolve::minimal_advances(3, 1), 3);
  // T = 10, s = 3: r = 2 (C(5,3) = 10 >= 10), 2*10 - C(5,4) = 15.
  EXPECT_EQ(revolve::minimal_advances(10, 3), 15);
  using A = revolve::Action;
  // T = 3, s = 2: the optimum (2 advances) snapshots state 1, not 2.
  const std::vector<A> three_two{{ActionKind::snapshot, 0, 0},  {ActionKind::advance, 0, 1},
                                 {ActionKind::snapshot, 1, 1},  {ActionKind::advance, 1, 2},
                                 {ActionKind::first_reverse, 2, 3}, {ActionKind::restore, 1, 1},
                                 {ActionKind::reverse, 1, 2},   {ActionKind::discard, 1, 1},
                                 {ActionKind::restore, 0, 0},   {ActionKind::reverse, 0, 1}};
  EXPECT_EQ(revolve::schedule(3, 2), three_two);
  EXPECT_EQ(revolve::forward_snapshots(3, 2), (std::vector<std::int64_t>{1}));
  EXPECT_TRUE(revolve::forward_snapshots(5, 1).empty());
}

TEST(RevolveSchedule, BadArgumentsAreValueErrors) {
  EXPECT_THROW(revolve::schedule(5, 0), ValueError);
  EXPECT_THROW(revolve::schedule(-1, 2), ValueError);
  EXPECT_THROW(revolve::minimal_advances(4, 0), ValueError);
  EXPECT_THROW(revolve::split(1, 3), ValueError);
}

// ---- scan with revolve ----------------------------------------------------------------------

// The identity, counting how often it runs: once per step forward, once per replay.
std::int64_t g_runs = 0;
struct CountRuns {
  static constexpr std::string_view name = "count_runs";
  Tensor forward(const Tensor& x) const {
    ++g_runs;
    return x;
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {a.grad};
  }
};
Var counted(const Var& x) { return record(CountRuns{}, x); }

Tensor init(std::uint64_t seed, const Shape& shape, double scale) {
  Generator gen(seed);
  return normal(shape, 0.0, scale, gen, f64);
}

struct Grads3 {
  Tensor loss, w, h0, xs;
  std::int64_t forward_runs = 0, backward_runs = 0;
  bool captured = false;  // the step's first two calls were dropped once captured: 2 more runs
  detail::ChainStats stats;
};

// h_t = tanh(W h_{t-1} + x_t) with a counted identity inside the step; loss on the last h
// and on the stacked h (Theano face, carry fed back and kept only last with Keep::last).
Grads3 rnn(std::int64_t steps, Checkpoint checkpoint, Keep keep = Keep::last,
           std::optional<Capture> capture = std::nullopt) {
  Tape tape;
  Var w = tape.variable(init(1, {3, 3}, 0.5));
  Var h0 = tape.variable(init(2, {1, 3}, 1.0));
  Var xs = tape.variable(init(3, {steps, 1, 3}, 1.0));
  g_runs = 0;
  auto r = scan([](S a) { return tanh(matmul(counted(a[1]), a[2]) + a[0]); },
                {.sequences = {xs}, .outputs_info = {h0}, .non_sequences = {w}, .keep = keep, .checkpoint = checkpoint,
                 .capture = capture});
  Grads3 out;
  out.forward_runs = g_runs;
  out.captured = r.capture.captured;
  Var loss = keep == Keep::last ? sum(r[0] * r[0]) : sum(r[0] * r[0]) + sum(index(r[0], 0, steps - 1));
  g_runs = 0;
  tape.backward(loss);
  out.backward_runs = g_runs;
  const auto stats = TapeAccess::chain_stats(tape);
  if (!stats.empty()) out.stats = stats.back();
  out.loss = loss.value();
  out.w = w.grad();
  out.h0 = h0.grad();
  out.xs = xs.grad();
  return out;
}

void expect_same_gradients(const Grads3& got, const Grads3& want, const std::string& what) {
  EXPECT_TRUE(same_bits(got.loss, want.loss)) << what;
  EXPECT_TRUE(same_bits(got.w, want.w)) << what;
  EXPECT_TRUE(same_bits(got.h0, want.h0)) << what;
  EXPECT_TRUE(same_bits(got.xs, want.xs)) << what;
}

TEST(ScanRevolve, ReplaysExactlyTheFormulaAndGivesTheFullTapesGradients) {
  for (std::int64_t steps = 1; steps <= 60; ++steps) {
    const Grads3 full = rnn(steps, Checkpoint::none());
    EXPECT_EQ(full.forward_runs, steps + (full.captured ? 2 : 0));
    if (default_capture() == Capture::required) {
      EXPECT_EQ(full.captured, steps >= 3) << "T = " << steps;
    } else if (default_capture() == Capture::automatic) {
      EXPECT_FALSE(full.captured) << "T = " << steps;  // values of 3 elements: too small to pay
    }
    EXPECT_EQ(full.backward_runs, 0);
    for (std::int64_t s = 1; s <= 10; ++s) {
      const std::string what = "T = " + std::to_string(steps) + ", s = " + std::to_string(s);
      const Grads3 rv = rnn(steps, Checkpoint::snapshots(s));
      EXPECT_EQ(rv.forward_runs, steps + (rv.captured ? 2 : 0)) << what;
      EXPECT_EQ(rv.backward_runs, formula(steps, s)) << what;  // counted in the step itself
      EXPECT_EQ(rv.stats.replayed_steps, formula(steps, s)) << what;
      EXPECT_LE(rv.stats.peak_snapshots, s) << what;
      expect_same_gradients(rv, full, what);
    }
  }
}

TEST(ScanRevolve, LongerChains) {
  for (auto [steps, s] : {std::pair<std::int64_t, std::int64_t>{200, 3}, {200, 10}, {1000, 4}, {1000, 32}}) {
    const std::string what = "T = " + std::to_string(steps) + ", s = " + std::to_string(s);
    const Grads3 rv = rnn(steps, Checkpoint::snapshots(s));
    EXPECT_EQ(rv.backward_runs, formula(steps, s)) << what;
    EXPECT_LE(rv.stats.peak_snapshots, s) << what;
    expect_same_gradients(rv, rnn(steps, Checkpoint::none()), what);
  }
}

TEST(ScanRevolve, StackedOutputsAndLessHeld) {
  const Grads3 full = rnn(40, Checkpoint::none(), Keep::all);
  const Grads3 rv = rnn(40, Checkpoint::snapshots(3), Keep::all);
  expect_same_gradients(rv, full, "Keep::all");
  EXPECT_EQ(rv.backward_runs, formula(40, 3));
  // Held bytes: a longer carry (a wide step) makes the difference visible.
  auto held = [](Checkpoint c) {
    Tape tape;
    Var w = tape.variable(init(1, {16, 16}, 0.3));
    Var h0 = tape.variable(init(2, {4, 16}, 1.0));
    auto r = scan([](S a) { return tanh(matmul(a[0], a[1]) * 1.5 + 0.1); },
                  {.outputs_info = {h0}, .non_sequences = {w}, .n_steps = 100, .keep = Keep::last, .checkpoint = c});
    return tape.bytes_held();
  };
  const std::size_t full_bytes = held(Checkpoint::none()), three = held(Checkpoint::snapshots(3)),
                    ten = held(Checkpoint::snapshots(10));
  EXPECT_LT(three, full_bytes / 10);
  EXPECT_LT(three, ten);
}

// RandomStream draws inside the step, a shared update returned by the step, until.
struct Noisy {
  // Seed 7: with these draws sum(next^2) first passes 0.5 at step 11 of 30 (until's test).
  Shared w{init(7, {4, 4}, 0.8), "W"};
  Shared h0{init(5, {4}, 1.0), "h0"};
  Shared count{zeros({}, f64), "count"};

  struct Result {
    Tensor out, grad_w, grad_h0, state, count;
    std::int64_t steps = 0;
    detail::ChainStats stats;
  };
  Result run(RandomStream& trng, Checkpoint c, double stop_at, std::int64_t truncate = -1) {
    w.zero_grad();
    h0.zero_grad();
    Tape tape;
    auto r = scan(
        [&](S a) {
          Var h = tanh(matmul(a[0], a[1]));
          Var keep = trng.binomial(sigmoid(h));
          Var noise = trng.normal({4}, 0.0, 0.1, f64);
          Var next = h * keep + noise * h;
          Var n = Var(count) + 1.0;
          return StepResult({next}, Updates{{count, n}}, until(greater(sum(next * next), Var(tape.constant(scalar(stop_at, f64))))));
        },
        {.outputs_info = {Var(h0)}, .non_sequences = {Var(w)}, .n_steps = 30, .truncate_gradient = truncate,
         .checkpoint = c});
    Result out;
    out.steps = r.steps;
    out.out = r[0].value();
    backward(sum(r[0] * r[0]) + sum(r.updates[count]));
    out.grad_w = w.grad();
    out.grad_h0 = h0.grad();
    out.state = r.updates[trng.state()].value();
    out.count = r.updates[count].value();
    const auto stats = TapeAccess::chain_stats(tape);
    if (!stats.empty()) out.stats = stats.back();
    return out;
  }
};

TEST(ScanRevolve, RandomStreamsSharedUpdatesUntilAndTruncation) {
  Noisy net;
  RandomStream trng(99);
  for (double stop_at : {1e9, 0.5})
    for (std::int64_t truncate : {std::int64_t{-1}, std::int64_t{4}}) {
      const auto full = net.run(trng, Checkpoint::none(), stop_at, truncate);
      for (std::int64_t s : {1, 2, 4}) {
        const std::string what = "stop " + std::to_string(stop_at) + ", truncate " + std::to_string(truncate) +
                                 ", s = " + std::to_string(s);
        const auto rv = net.run(trng, Checkpoint::snapshots(s), stop_at, truncate);
        EXPECT_EQ(rv.steps, full.steps) << what;
        EXPECT_TRUE(same_bits(rv.out, full.out)) << what;
        EXPECT_TRUE(same_bits(rv.grad_w, full.grad_w)) << what;
        EXPECT_TRUE(same_bits(rv.grad_h0, full.grad_h0)) << what;
        EXPECT_TRUE(same_bits(rv.state, full.state)) << what;
        EXPECT_TRUE(same_bits(rv.count, full.count)) << what;
        EXPECT_LE(rv.stats.peak_snapshots, s) << what;
        if (stop_at > 1e8 && truncate < 0) {
          EXPECT_EQ(rv.stats.replayed_steps, formula(30, s)) << what;
        }
      }
      if (stop_at < 1) {
        EXPECT_LT(full.steps, 30);  // until did stop it early
      }
    }
}

// A two-level loop: an inner scan inside the outer step; each level with or without revolve.
Tensor nested_grad(Checkpoint outer, Checkpoint inner, bool second_order) {
  Tape tape;
  Var w = tape.variable(init(6, {3, 3}, 0.4));
  Var h0 = tape.variable(init(7, {1, 3}, 1.0));
  auto r = scan(
      [&](S a) {
        auto in = scan([&](S b) { return tanh(matmul(b[0], b[1]) + 0.1); },
                       {.outputs_info = {a[0]}, .non_sequences = {a[1]}, .n_steps = 5, .keep = Keep::last,
                        .checkpoint = inner});
        return tanh(in[0] * 1.1) * 1.1;
      },
      {.outputs_info = {h0}, .non_sequences = {w}, .n_steps = 7, .keep = Keep::last, .checkpoint = outer});
  Var loss = sum(r[0] * r[0]);
  Var g = grad(loss, w, {.create_graph = second_order});
  if (!second_order) return g.value();
  return grad(sum(g * g), w).value();
}

TEST(ScanRevolve, NestedScansAndSecondOrder) {
  // Against the full tape replayed a node per op and step: the one-node loop sums each inner
  // loop's second-order shares of w before adding them to the other loops' (its own test is
  // in test_scan_capture.cpp).
  const testing::LoopNodeScope per_op(false);
  for (bool second : {false, true}) {
    const Tensor full = nested_grad(Checkpoint::none(), Checkpoint::none(), second);
    for (auto [outer, inner] : {std::pair{Checkpoint::snapshots(2), Checkpoint::none()},
                                {Checkpoint::none(), Checkpoint::snapshots(2)},
                                {Checkpoint::snapshots(3), Checkpoint::snapshots(2)},
                                {Checkpoint::every_k(2), Checkpoint::snapshots(1)},
                                {Checkpoint::snapshots(2), Checkpoint::every_k(2)}}) {
      const Tensor got = nested_grad(outer, inner, second);
      EXPECT_TRUE(same_bits(got, full)) << "second order " << second << "\n" << got << "\nvs\n" << full;
    }
  }
}

TEST(ScanRevolve, TapsOnTheTheanoFace) {
  auto run = [](Checkpoint c) {
    Tape tape;
    Var a = tape.variable(init(8, {2, 3}, 0.5));
    Var xs = tape.variable(init(9, {12, 3}, 1.0));
    auto r = scan([](S v) { return tanh(v[0] + v[1] * 0.5 - v[2] * 0.25); },
                  {.sequences = {xs}, .outputs_info = {OutputInfo(a, {-2, -1})}, .keep = Keep::last, .checkpoint = c});
    backward(sum(r[0] * r[0]));
    return std::pair{a.grad(), xs.grad()};
  };
  const auto full = run(Checkpoint::none());
  for (std::int64_t s : {1, 2, 3, 5}) {
    const auto rv = run(Checkpoint::snapshots(s));
    EXPECT_TRUE(same_bits(rv.first, full.first)) << s;
    EXPECT_TRUE(same_bits(rv.second, full.second)) << s;
  }
}

TEST(ScanRevolve, BudgetPicksTheSnapshotsFromTheBytesOfOneStep) {
  // Step of rnn(): values of counted (aliases h), matmul [1,3], add [1,3], tanh [1,3] -> the
  // distinct buffers are three float64 [1,3] (72 bytes); the carry is tanh's, 24 bytes. As
  // recorded (Capture::off); captured, add and tanh are one op that keeps both values.
  auto snapshots_for = [](std::size_t bytes) {
    return rnn(30, Checkpoint::budget(bytes), Keep::last, Capture::off).stats.snapshots;
  };
  EXPECT_EQ(snapshots_for(1), 1);               // below one step: the start only
  EXPECT_EQ(snapshots_for(72), 1);
  EXPECT_EQ(snapshots_for(72 + 24), 2);
  EXPECT_EQ(snapshots_for(72 + 5 * 24 + 10), 6);
  const Grads3 rv = rnn(30, Checkpoint::budget(72 + 5 * 24), Keep::last, Capture::off);
  EXPECT_EQ(rv.backward_runs, formula(30, 6));
  // Captured, a step holds the same 72 bytes: the same snapshots.
  const Grads3 captured = rnn(30, Checkpoint::budget(72 + 5 * 24), Keep::last, Capture::required);
  EXPECT_EQ(captured.stats.snapshots, 6);
  expect_same_gradients(captured, rnn(30, Checkpoint::none(), Keep::last, Capture::required), "budget, captured");
  expect_same_gradients(rv, rnn(30, Checkpoint::none(), Keep::last, Capture::off), "budget");
}

TEST(ScanRevolve, JaxAndOnnxFaces) {
  auto jax_grad = [](Checkpoint c) {
    Tape tape;
    Var w = tape.variable(init(12, {3}, 0.7));
    Var xs = tape.variable(init(13, {25, 3}, 1.0));
    auto [carry, ys] = scan([&](const Var& h, const Var& x) { return std::pair{tanh(h * w + x), sum(h)}; },
                            Var(tape.constant(zeros({3}, f64))), xs, {.reverse = true, .checkpoint = c});
    backward(sum(carry * carry) + sum(ys));
    return std::pair{w.grad(), xs.grad()};
  };
  auto onnx_grad = [](Checkpoint c) {
    Tape tape;
    Var xs = tape.variable(init(14, {3, 25}, 1.0));
    Var h0 = tape.variable(init(15, {3}, 1.0));
    auto [states, outs] = onnx_scan([](S a) { return std::vector<Var>{tanh(a[0] + a[1]), a[0] * 2.0}; }, {h0}, {xs},
                                    {.scan_input_axes = {1}, .checkpoint = c});
    backward(sum(states[0]) + sum(outs[0] * outs[0]));
    return std::pair{h0.grad(), xs.grad()};
  };
  const auto jax_full = jax_grad(Checkpoint::none()), onnx_full = onnx_grad(Checkpoint::none());
  for (std::int64_t s : {1, 3}) {
    const auto j = jax_grad(Checkpoint::snapshots(s));
    EXPECT_TRUE(same_bits(j.first, jax_full.first) && same_bits(j.second, jax_full.second)) << s;
    const auto o = onnx_grad(Checkpoint::snapshots(s));
    EXPECT_TRUE(same_bits(o.first, onnx_full.first) && same_bits(o.second, onnx_full.second)) << s;
  }
}

TEST(ScanRevolve, LayersTakeTheOption) {
  auto run = [&](Checkpoint c) {
    nn::RecurrentOptions o;
    o.input_size = 4;
    o.hidden_size = 5;
    o.dtype = f64;
    o.checkpoint = c;
    Generator gen(11);
    const nn::LSTM lstm(o, gen);
    Tape tape;
    Var x = tape.variable(normal({9, 2, 4}, 0.0, 1.0, gen, f64));
    auto out = lstm(x);
    backward(sum(out.output * out.output) + sum(out.c_n));
    return x.grad();
  };
  const Tensor full = run(Checkpoint::every_k(1));
  EXPECT_TRUE(same_bits(run(Checkpoint::snapshots(2)), full));
  EXPECT_TRUE(same_bits(run(Checkpoint::budget(1 << 12)), full));
}

TEST(ScanRevolve, BadPoliciesAreValueErrorsBeforeAnythingIsRecorded) {
  Tape tape;
  Var h0 = tape.variable(zeros({2}, f64));
  const auto before = tape.size();
  for (Checkpoint c : {Checkpoint::snapshots(0), Checkpoint::snapshots(-3), Checkpoint::budget(0),
                       Checkpoint{.every = 2, .revolve = true, .snapshot_count = 2}}) {
    EXPECT_THROW(scan([](S a) { return a[0] * 2.0; }, {.outputs_info = {h0}, .n_steps = 3, .checkpoint = c}),
                 ValueError);
    EXPECT_EQ(tape.size(), before);
  }
}

}  // namespace
}  // namespace recur
