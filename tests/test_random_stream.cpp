// RandomStream: draws against one core/random Generator, eager and inside scan (state as an
// implicit update of the scan), strict scans, nested scans, checkpoint replay.
#include <gtest/gtest.h>

#include <cstring>

#include "expect_error.hpp"

#include <recur/recur.hpp>

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.clone().raw_data(), b.clone().raw_data(), a.nbytes()) == 0;
}

#define EXPECT_SAME_BITS(a, b) EXPECT_TRUE(same_bits(a, b)) << (a) << "\nvs\n" << (b)

TEST(RandomStream, EagerDrawsFollowOneGenerator) {
  RandomStream trng(7);
  Generator g(7);
  EXPECT_SAME_BITS(trng.state().value(), g.state());
  Tape tape;
  const Tensor p = tensor({0.1, 0.5, 0.9, 0.0, 1.0}, f64);
  Var u = trng.uniform({3, 4}, -1.0, 2.0, f64);
  Var n = trng.normal({5}, 1.0, 2.0, f64);  // odd: the last pair's second draw is consumed too
  Var b = trng.binomial(tape.constant(p));
  Var u32 = trng.uniform({2});
  Var n32 = trng.normal({3}, 0.0, 1.0);
  EXPECT_SAME_BITS(u.value(), uniform({3, 4}, -1.0, 2.0, g, f64));
  EXPECT_SAME_BITS(n.value(), normal({5}, 1.0, 2.0, g, f64));
  EXPECT_SAME_BITS(b.value(), bernoulli(p, g));
  EXPECT_SAME_BITS(u32.value(), uniform({2}, 0.0, 1.0, g));
  EXPECT_SAME_BITS(n32.value(), normal({3}, 0.0, 1.0, g));
  EXPECT_SAME_BITS(trng.state().value(), g.state());  // each draw advanced the Shared at once
  EXPECT_EQ(b.dtype(), f64);                           // binomial(p) takes p's dtype by default
  EXPECT_EQ(trng.binomial(tape.constant(p), DType::int64).dtype(), DType::int64);
}

TEST(RandomStream, ConsecutiveDrawsDifferAndSeedsReproduce) {
  RandomStream a(42, "a"), b(42, "b");
  Tape tape;
  const Tensor a1 = a.uniform({8}, 0.0, 1.0, f64).value(), a2 = a.uniform({8}, 0.0, 1.0, f64).value();
  EXPECT_FALSE(same_bits(a1, a2));
  EXPECT_SAME_BITS(b.uniform({8}, 0.0, 1.0, f64).value(), a1);
  EXPECT_SAME_BITS(b.uniform({8}, 0.0, 1.0, f64).value(), a2);
  a.seed(42);
  EXPECT_SAME_BITS(a.uniform({8}, 0.0, 1.0, f64).value(), a1);
  EXPECT_EQ(a.state().name(), "a");
  EXPECT_EQ(a.state().dtype(), DType::int64);
}

TEST(RandomStream, BinomialWithNTrials) {
  RandomStream trng(3);
  Generator g(3);
  Tape tape;
  // n = 1 is core/random's bernoulli(shape, p).
  EXPECT_SAME_BITS(trng.binomial({4, 5}, 1, 0.3, DType::int64).value(), bernoulli({4, 5}, 0.3, g, DType::int64));
  // n trials per element, element after element.
  const Tensor k = trng.binomial({2000}, 5, 0.3, f64).value();
  std::vector<double> expected;
  for (int i = 0; i < 2000; ++i) {
    int c = 0;
    for (int j = 0; j < 5; ++j) c += g.next_double() < 0.3;
    expected.push_back(c);
  }
  EXPECT_EQ(to_vector<double>(k), expected);
  EXPECT_SAME_BITS(trng.state().value(), g.state());
  EXPECT_NEAR(mean(k).item(), 1.5, 0.1);
  // n = 0 draws nothing.
  EXPECT_SAME_BITS(trng.binomial({3}, 0, 0.5).value(), zeros({3}));
  EXPECT_SAME_BITS(trng.state().value(), g.state());
}

TEST(RandomStream, SamplesCarryNoGradient) {
  RandomStream trng(11);
  Tape tape;
  Var p = tape.variable(tensor({0.2, 0.7, 0.5, 0.9}, f64));
  Var x = tape.variable(tensor({1.0, 2.0, 3.0, 4.0}, f64));
  Var s = trng.binomial(p);
  EXPECT_FALSE(s.requires_grad());
  auto g = grad(std::vector<Var>{sum(s * x + p)}, std::vector<Var>{p, x});
  EXPECT_SAME_BITS(g[0].value(), ones({4}, f64));  // only from "+ p": none through the sample
  EXPECT_SAME_BITS(g[1].value(), s.value());
}

TEST(RandomStream, BadArgumentsRecordNothingAndKeepTheState) {
  using testing::expect_clean_failure;
  RandomStream trng(5, "noise");
  const Tensor before = trng.state().value();
  Tape tape;
  Var bad_p = tape.constant(tensor({0.5, 1.5}, f64));
  expect_clean_failure<ValueError>(tape, [&] { trng.binomial(bad_p); }, {"bernoulli", "[2]", "1.5"});
  expect_clean_failure<ValueError>(tape, [&] { trng.uniform({2}, 1.0, 0.0); }, {"uniform", "'hi'"});
  expect_clean_failure<ValueError>(tape, [&] { trng.normal({2}, 0.0, -1.0); }, {"normal", "'std'"});
  expect_clean_failure<DTypeError>(tape, [&] { trng.uniform({2}, 0.0, 1.0, DType::int64); }, {"uniform", "int64"});
  expect_clean_failure<ValueError>(tape, [&] { trng.binomial({2}, -1, 0.5); }, {"RandomStream::binomial", "'n'"});
  expect_clean_failure<ValueError>(tape, [&] { trng.binomial({2}, 2, 1.5); }, {"RandomStream::binomial", "'p'"});
  expect_clean_failure<ShapeError>(tape, [&] { trng.binomial({-2}, 2, 0.5); }, {"RandomStream::binomial", "shape"});
  expect_clean_failure<ValueError>(tape, [&] { trng.binomial(Var()); }, {"RandomStream::binomial", "'p'"});
  EXPECT_SAME_BITS(trng.state().value(), before);
}

// One scan of `steps` iterations, each drawing uniform({3}) then normal({2}).
ScanResult draw_scan(RandomStream& trng, std::int64_t steps) {
  return scan([&](S) { return StepResult{trng.uniform({3}, 0.0, 1.0, f64), trng.normal({2}, 0.0, 1.0, f64)}; },
              {.n_steps = steps});
}

void expect_hand_loop(const ScanResult& r, Generator& g, std::int64_t steps) {
  for (std::int64_t t = 0; t < steps; ++t) {
    EXPECT_SAME_BITS(r[0].value()[t], uniform({3}, 0.0, 1.0, g, f64));
    EXPECT_SAME_BITS(r[1].value()[t], normal({2}, 0.0, 1.0, g, f64));
  }
}

TEST(RandomStream, InsideScanTheStateIsAnUpdateOfTheScan) {
  RandomStream trng(99);
  const Tensor initial = trng.state().value();
  Generator g(99);
  Tensor first;
  for (int call = 0; call < 2; ++call) {  // without applying the updates: the same draws
    Tape tape;
    auto r = draw_scan(trng, 4);
    Generator h(99);
    expect_hand_loop(r, h, 4);
    ASSERT_TRUE(r.updates.contains(trng.state()));
    EXPECT_SAME_BITS(r.updates[trng.state()].value(), h.state());
    EXPECT_SAME_BITS(trng.state().value(), initial);  // untouched until applied
    if (call == 0) first = r[0].value();
    else EXPECT_SAME_BITS(r[0].value(), first);
  }
  Tape tape;
  auto r = draw_scan(trng, 4);
  apply_updates(r.updates);
  expect_hand_loop(r, g, 4);
  EXPECT_SAME_BITS(trng.state().value(), g.state());
  Tape next;  // a new call continues the stream
  auto r2 = draw_scan(trng, 3);
  expect_hand_loop(r2, g, 3);
  // Eager draws after the scan on the same tape; backward still works (the stream's
  // state needs no gradient, so its change is no VersionError).
  Shared w(tensor({0.5, -0.5, 2.0}, f64), "w");
  Var loss = sum(r2[0] * Var(w));
  trng.uniform({2});
  apply_updates(r2.updates);
  EXPECT_NO_THROW(backward(loss));
  EXPECT_TRUE(w.has_grad());
}

TEST(RandomStream, ScanWithoutGradientsDrawsTheSame) {
  RandomStream trng(17);
  Tape tape;
  auto recorded = draw_scan(trng, 6);
  NoGrad off;
  auto plain = draw_scan(trng, 6);
  EXPECT_SAME_BITS(plain[0].value(), recorded[0].value());
  EXPECT_SAME_BITS(plain[1].value(), recorded[1].value());
  EXPECT_SAME_BITS(plain.updates[trng.state()].value(), recorded.updates[trng.state()].value());
}

TEST(RandomStream, ReturnedUpdatesAndStreamUpdatesTogether) {
  RandomStream trng(8);
  Shared counter(scalar(0.0, f64), "counter");
  Tape tape;
  auto r = scan(
      [&](S) {
        return StepResult({trng.uniform({2}, 0.0, 1.0, f64)}, Updates{{counter, Var(counter) + 1.0}});
      },
      {.n_steps = 5});
  EXPECT_EQ(r.updates.size(), 2u);
  EXPECT_DOUBLE_EQ(r.updates[counter].value().item(), 5.0);
  Generator g(8);
  for (int t = 0; t < 5; ++t) EXPECT_SAME_BITS(r[0].value()[t], uniform({2}, 0.0, 1.0, g, f64));
  EXPECT_SAME_BITS(r.updates[trng.state()].value(), g.state());
}

TEST(RandomStream, NestedScanHandsTheStateToTheOuterScan) {
  RandomStream trng(21);
  Tape tape;
  auto outer = scan(
      [&](S) {
        auto inner = scan([&](S) { return trng.uniform({2}, 0.0, 1.0, f64); }, {.n_steps = 2});
        return inner[0];
      },
      {.n_steps = 3});
  Generator g(21);
  for (std::int64_t i = 0; i < 3; ++i)
    for (std::int64_t j = 0; j < 2; ++j) EXPECT_SAME_BITS(outer[0].value()[i][j], uniform({2}, 0.0, 1.0, g, f64));
  EXPECT_SAME_BITS(outer.updates[trng.state()].value(), g.state());
  EXPECT_SAME_BITS(trng.state().value(), Generator(21).state());
}

TEST(RandomStream, ZeroStepsDrawNothing) {
  RandomStream trng(4);
  Tape tape;
  // No outputs_info: the step is probed once for the output shapes; its draw is dropped.
  auto r = scan([&](S a) { return a[0] * trng.uniform({3}, 0.0, 1.0, f64); },
                {.sequences = {Var(zeros({0, 3}, f64))}});
  EXPECT_EQ(r.steps, 0);
  EXPECT_TRUE(r.updates.empty());
  EXPECT_SAME_BITS(trng.state().value(), Generator(4).state());
}

// strict: the step may draw only from a stream whose state was passed in non_sequences.
TEST(RandomStream, StrictScanNeedsTheStreamState) {
  RandomStream trng(6, "trng");
  Tape tape;
  Var x0 = tape.constant(zeros({2}, f64));
  auto step = [&](S a) { return a[0] + trng.uniform({2}, 0.0, 1.0, f64); };
  testing::expect_clean_failure<ValueError>(
      tape, [&] { scan(step, {.outputs_info = {x0}, .n_steps = 3, .strict = true}); }, {"strict", "'trng'"});
  EXPECT_SAME_BITS(trng.state().value(), Generator(6).state());
  auto r = scan(step, {.outputs_info = {x0}, .non_sequences = {Var(trng.state())}, .n_steps = 3, .strict = true});
  Generator g(6);
  Tensor acc = zeros({2}, f64);
  for (int t = 0; t < 3; ++t) {
    acc = acc + uniform({2}, 0.0, 1.0, g, f64);
    EXPECT_SAME_BITS(r[0].value()[t], acc);
  }
}

// A recurrent step that uses its draws as multipliers of differentiable values.
Tensor init(std::uint64_t seed, const Shape& shape, double scale) {
  Generator g(seed);
  return uniform(shape, -scale, scale, g, f64);
}

struct NoisyRnn {
  Shared W{init(1, {4, 4}, 0.8), "W"};
  Shared h0{init(2, {4}, 1.0), "h0"};

  struct Result {
    Tensor outputs, grad_W, grad_h0, state;
    std::size_t bytes_held;
  };
  Result run(RandomStream& trng, Checkpoint checkpoint) {
    W.zero_grad();
    h0.zero_grad();
    Tape tape;
    auto r = scan(
        [&](S a) {
          Var h = tanh(matmul(a[0], a[1]));
          Var keep = trng.binomial(sigmoid(h));  // depends on W: released and replayed
          Var noise = trng.normal({4}, 0.0, 0.1, f64);
          Var jitter = trng.uniform({4}, 0.5, 1.5, f64);
          return h * keep * jitter + noise * h;
        },
        {.outputs_info = {Var(h0)}, .non_sequences = {Var(W)}, .n_steps = 10, .checkpoint = checkpoint});
    const std::size_t held = tape.bytes_held();
    backward(sum(r[0] * r[0]));
    return {r[0].value(), W.grad(), h0.grad(), r.updates[trng.state()].value(), held};
  }
};

TEST(RandomStream, CheckpointReplaysTheSameDraws) {
  NoisyRnn rnn;
  RandomStream trng(1234);
  const auto full = rnn.run(trng, Checkpoint::none());
  for (Checkpoint c : {Checkpoint::every_k(3), Checkpoint::every_k(1), Checkpoint::auto_sqrt()}) {
    const auto ck = rnn.run(trng, c);
    EXPECT_SAME_BITS(ck.outputs, full.outputs);
    EXPECT_SAME_BITS(ck.grad_W, full.grad_W);
    EXPECT_SAME_BITS(ck.grad_h0, full.grad_h0);
    EXPECT_SAME_BITS(ck.state, full.state);
    EXPECT_LT(ck.bytes_held, full.bytes_held);  // the draws and states were released
  }
  EXPECT_GT(max_abs_diff(full.grad_W, zeros({4, 4}, f64)), 0.0);
  // After applying the updates the draws (and so the gradients) change.
  Tape tape;
  apply_updates(Updates{{trng.state(), tape.constant(full.state)}});
  EXPECT_FALSE(same_bits(rnn.run(trng, Checkpoint::every_k(3)).grad_W, full.grad_W));
}

}  // namespace
}  // namespace recur
