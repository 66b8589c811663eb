// The examples of the seed documents (Theano's scan guide, ONNX's Scan, JAX's lax.scan),
// reproduced with the values the documents print.
#include <gtest/gtest.h>

#include <cmath>

#include <recur/recur.hpp>
#include "values.hpp"

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

using testing::values;

// A^k elementwise: result, updates = scan(lambda prior, A: prior * A, outputs_info=ones_like(A),
// non_sequences=A, n_steps=k); power(range(10), 2) and power(range(10), 4).
TEST(SeedTheano, PowerAk) {
  for (int k : {2, 4}) {
    Tape tape;
    Var A = tape.constant(arange(0.0, 10.0, 1.0, f64));
    auto r = scan([](S a) { return a[0] * a[1]; },
                  {.outputs_info = {Var(ones({10}, f64))}, .non_sequences = {A}, .n_steps = k});
    EXPECT_EQ(r[0].shape(), (Shape{k, 10}));
    const auto last = to_vector<double>(r[0].value()[k - 1]);
    for (int i = 0; i < 10; ++i) EXPECT_DOUBLE_EQ(last[i], std::pow(i, k));
  }
}

// The polynomial with the enumerate trick: sequences=[coefficients, arange(10000)] truncate
// to the shortest; [1, 0, 2] at x = 3 gives 19.
TEST(SeedTheano, PolynomialWithEnumerateTrick) {
  Tape tape;
  Var coefficients = tape.constant(tensor({1.0, 0.0, 2.0}, f64));
  Var x = tape.constant(scalar(3.0, f64));
  auto r = scan([](S a) { return a[0] * pow(a[2], a[1]); },
                {.sequences = {coefficients, Var(arange(0.0, 10000.0, 1.0, f64))}, .non_sequences = {x}});
  EXPECT_EQ(r.steps, 3);
  EXPECT_DOUBLE_EQ(sum(r[0]).value().item(), 19.0);
}

// Triangular numbers: fn(arange_val, sum_to_date) = sum_to_date + arange_val over arange(15).
TEST(SeedTheano, TriangularNumbers) {
  Tape tape;
  auto r = scan([](S a) { return a[1] + a[0]; },
                {.sequences = {Var(arange(0.0, 15.0, 1.0, f64))}, .outputs_info = {Var(scalar(0.0, f64))}});
  const auto got = values(r[0]);
  ASSERT_EQ(got.size(), 15u);
  for (int n = 0; n < 15; ++n) EXPECT_DOUBLE_EQ(got[n], n * (n + 1) / 2);
}

// The shared counter: a = shared(1); values, updates = scan(lambda: {a: a+1}, n_steps=10);
// b = a + 1 is 2, c = updates[a] + 1 is 12, a becomes 11 once applied; then 12, 22, 21.
TEST(SeedTheano, SharedCounterUpdates) {
  Shared a(scalar(1.0, f64), "a");
  for (double round : {0.0, 1.0}) {
    Tape tape;
    auto r = scan([&](S) { return Updates{{a, Var(a) + 1.0}}; }, {.n_steps = 10});
    EXPECT_TRUE(r.outputs.empty());
    Var b = Var(a) + 1.0;
    Var c = r.updates[a] + 1.0;
    EXPECT_DOUBLE_EQ(b.value().item(), 2.0 + 10 * round);
    EXPECT_DOUBLE_EQ(c.value().item(), 12.0 + 10 * round);
    EXPECT_DOUBLE_EQ(a.value().item(), 1.0 + 10 * round);  // nothing changed before apply
    apply_updates(r.updates);
    EXPECT_DOUBLE_EQ(a.value().item(), 11.0 + 10 * round);
  }
}

// Without applying the updates, a stays 1: b is always 2 and c always 12.
TEST(SeedTheano, SharedCounterWithoutApplying) {
  Shared a(scalar(1.0, f64), "a");
  for (int call = 0; call < 3; ++call) {
    Tape tape;
    auto r = scan([&](S) { return Updates{{a, Var(a) + 1.0}}; }, {.n_steps = 10});
    EXPECT_DOUBLE_EQ((Var(a) + 1.0).value().item(), 2.0);
    EXPECT_DOUBLE_EQ((r.updates[a] + 1.0).value().item(), 12.0);
  }
}

// Powers of two below 45 with until: [2, 4, 8, 16, 32, 64].
TEST(SeedTheano, PowersOfTwoUntil) {
  Tape tape;
  Var max_value = tape.constant(scalar(45.0, f64));
  auto r = scan(
      [](S a) {
        Var next = a[0] * 2.0;
        return StepResult({next}, {}, until(greater(next, a[1])));
      },
      {.outputs_info = {Var(scalar(1.0, f64))}, .non_sequences = {max_value}, .n_steps = 1024});
  EXPECT_EQ(r.steps, 6);
  EXPECT_EQ(values(r[0]), (std::vector<double>{2, 4, 8, 16, 32, 64}));
}

}  // namespace
}  // namespace recur
