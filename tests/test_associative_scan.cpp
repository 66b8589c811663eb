// associative_scan (JAX's lax.associative_scan) against sequential loops written by hand
// and against jax::scan, for odd and even lengths, reverse, several axes and trees; its
// gradients against finite differences and against the sequential scan's. Then
// linear_recurrence against a hand loop and against associative_scan on the same problem.
#include <gtest/gtest.h>

#include <utility>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using Pair = std::pair<Var, Var>;
constexpr DType f64 = DType::float64;

Var randn(Tape& tape, Generator& gen, const Shape& shape, DType dtype = f64) {
  return tape.variable(normal(shape, 0.0, 1.0, gen, dtype));
}

void expect_close(const Var& got, const Var& want, const std::string& what, double tol = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(max_abs_diff(got.value(), want.value()), tol) << what;
}

std::string label(std::int64_t n, std::int64_t axis, bool reverse) {
  return "n=" + std::to_string(n) + " axis=" + std::to_string(axis) + (reverse ? " reverse" : "");
}

// The pair (a, b) stands for h -> a h + b; compose applies `first`, then `second`.
Pair compose(const Pair& first, const Pair& second) {
  return {first.first * second.first, second.first * first.second + second.second};
}

// fold(x[i0], x[i1], ...) over positions visited in scan order, each prefix stacked back at
// its own position: the definition of the (inclusive, possibly reverse) scan, by hand.
template <class F, class T>
std::vector<T> prefix_by_hand(F fn, const std::vector<T>& slices, bool reverse) {
  const std::size_t n = slices.size();
  std::vector<T> out(n);
  for (std::size_t k = 0; k < n; ++k) {
    const std::size_t i = reverse ? n - 1 - k : k;
    out[i] = k == 0 ? slices[i] : fn(out[reverse ? i + 1 : i - 1], slices[i]);
  }
  return out;
}

std::vector<Var> slices_of(const Var& x, std::int64_t axis) {
  std::vector<Var> out;
  for (std::int64_t i = 0; i < x.value().size(axis); ++i) out.push_back(index(x, axis, i));
  return out;
}

Var stacked(const std::vector<Var>& xs, std::int64_t axis) { return stack(std::span<const Var>(xs), axis); }

TEST(AssociativeScan, SumEqualsTheLoopForEveryLengthAxisAndDirection) {
  Generator gen(1);
  for (std::int64_t n : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17}) {
    for (std::int64_t axis : {0, 1, 2, -1}) {
      for (bool reverse : {false, true}) {
        Tape tape;
        Shape shape{2, 3, 2};
        const std::int64_t ax = axis < 0 ? axis + 3 : axis;
        shape[static_cast<std::size_t>(ax)] = n;
        const Var x = randn(tape, gen, shape);
        const auto add = [](const Var& p, const Var& q) { return p + q; };
        const Var got = associative_scan(add, x, {.reverse = reverse, .axis = axis});
        const Var want = stacked(prefix_by_hand(add, slices_of(x, ax), reverse), ax);
        expect_close(got, want, label(n, axis, reverse));
      }
    }
  }
}

// A non-commutative fn: the order of the operands matters, and reverse puts the later
// elements first (JAX: reverse the axis, scan, reverse back).
TEST(AssociativeScan, PairsEqualTheLoopInOrder) {
  Generator gen(2);
  for (std::int64_t n : {1, 2, 3, 5, 6, 11}) {
    for (std::int64_t axis : {0, 1}) {
      for (bool reverse : {false, true}) {
        Tape tape;
        const Shape shape = axis == 0 ? Shape{n, 3} : Shape{3, n};
        const Var a = randn(tape, gen, shape), b = randn(tape, gen, shape);
        const auto [ga, gb] = associative_scan(compose, Pair{a, b}, {.reverse = reverse, .axis = axis});
        std::vector<Pair> pairs;
        for (std::int64_t i = 0; i < n; ++i) pairs.push_back({index(a, axis, i), index(b, axis, i)});
        const auto want = prefix_by_hand(compose, pairs, reverse);
        std::vector<Var> wa, wb;
        for (const auto& [p, q] : want) wa.push_back(p), wb.push_back(q);
        expect_close(ga, stacked(wa, axis), "a " + label(n, axis, reverse));
        expect_close(gb, stacked(wb, axis), "b " + label(n, axis, reverse));
      }
    }
  }
}

// The pair scan's b-part is the recurrence h_t = a_t h_{t-1} + b_t from h = 0, which
// jax::scan runs step by step.
TEST(AssociativeScan, PairsEqualJaxScanOfTheRecurrence) {
  Generator gen(3);
  for (std::int64_t n : {1, 4, 7}) {
    for (bool reverse : {false, true}) {
      Tape tape;
      const Var a = randn(tape, gen, {n, 2, 3}), b = randn(tape, gen, {n, 2, 3});
      const Var h = associative_scan(compose, Pair{a, b}, {.reverse = reverse}).second;
      const Var zero = tape.constant(zeros({2, 3}, f64));
      const auto step = [](const Var& carry, const Pair& x) {
        const Var next = x.first * carry + x.second;
        return std::pair{next, next};
      };
      const auto [last, hs] = jax::scan(step, zero, Pair{a, b}, {.reverse = reverse});
      expect_close(h, hs, label(n, 0, reverse));
    }
  }
}

// Trees: a braced std::vector<Var>, and a tuple of three leaves of different ranks whose
// axis -1 is a different axis in each.
TEST(AssociativeScan, TreesKeepTheirStructure) {
  Generator gen(4);
  Tape tape;
  const Var x = randn(tape, gen, {5, 2}), y = randn(tape, gen, {5, 2});
  const auto both = associative_scan(
      [](const std::vector<Var>& p, const std::vector<Var>& q) { return std::vector<Var>{p[0] + q[0], p[1] * q[1]}; },
      {x, y}, {.axis = 0});
  ASSERT_EQ(both.size(), 2u);
  const auto add = [](const Var& u, const Var& v) { return u + v; };
  const auto times = [](const Var& u, const Var& v) { return u * v; };
  expect_close(both[0], stacked(prefix_by_hand(add, slices_of(x, 0), false), 0), "sum leaf");
  expect_close(both[1], stacked(prefix_by_hand(times, slices_of(y, 0), false), 0), "product leaf");
  using Three = std::tuple<Var, Var, Var>;
  const Var p = randn(tape, gen, {7}), q = randn(tape, gen, {2, 7}), r = randn(tape, gen, {3, 1, 7});
  const auto sums = [](const Three& u, const Three& v) {
    return Three{std::get<0>(u) + std::get<0>(v), std::get<1>(u) + std::get<1>(v), std::get<2>(u) + std::get<2>(v)};
  };
  const auto [sp, sq, sr] = associative_scan(sums, Three{p, q, r}, {.reverse = true, .axis = -1});
  expect_close(sp, stacked(prefix_by_hand(add, slices_of(p, 0), true), 0), "rank 1 leaf");
  expect_close(sq, stacked(prefix_by_hand(add, slices_of(q, 1), true), 1), "rank 2 leaf");
  expect_close(sr, stacked(prefix_by_hand(add, slices_of(r, 2), true), 2), "rank 3 leaf");
}

TEST(AssociativeScan, GradientsMatchFiniteDifferencesFirstAndSecondOrder) {
  Generator gen(5);
  for (std::int64_t n : {1, 2, 5, 8}) {
    for (bool reverse : {false, true}) {
      const std::vector<Tensor> inputs{normal({3, n}, 0, 1, gen, f64), normal({3, n}, 0, 1, gen, f64)};
      const auto report = check_gradients(
          [&](std::span<const Var> v) {
            const auto [a, b] = associative_scan(compose, Pair{v[0], tanh(v[1])}, {.reverse = reverse, .axis = 1});
            return a * b;
          },
          inputs);
      EXPECT_TRUE(report.ok) << label(n, 1, reverse) << ": " << report.failure;
    }
  }
}

// The parallel recursion and the sequential scan are two graphs of the same function:
// their gradients agree.
TEST(AssociativeScan, GradientsEqualTheSequentialScans) {
  Generator gen(6);
  for (std::int64_t n : {3, 6, 9}) {
    Tape tape;
    const Var a = randn(tape, gen, {n, 4}), b = randn(tape, gen, {n, 4});
    const Var h = associative_scan(compose, Pair{a, b}).second;
    const auto step = [](const Var& carry, const Pair& x) {
      const Var next = x.first * carry + x.second;
      return std::pair{next, next};
    };
    const Var hs = jax::scan(step, tape.constant(zeros({4}, f64)), Pair{a, b}).second;
    const Var w = tape.constant(normal({n, 4}, 0, 1, gen, f64));
    const Var inputs[] = {a, b};
    const Var loss_parallel[] = {sum(h * w)}, loss_sequential[] = {sum(hs * w)};
    const auto g1 = tape.grad(loss_parallel, inputs), g2 = tape.grad(loss_sequential, inputs);
    expect_close(g1[0], g2[0], "d/da n=" + std::to_string(n), 1e-10);
    expect_close(g1[1], g2[1], "d/db n=" + std::to_string(n), 1e-10);
  }
}

TEST(AssociativeScan, BadInputIsAClearErrorAndRecordsNothing) {
  Generator gen(7);
  Tape tape;
  const Var a = randn(tape, gen, {4, 2}), b = randn(tape, gen, {5, 2});
  expect_clean_failure<ShapeError>(tape, [&] { associative_scan(compose, Pair{a, b}); },
                                   {"associative_scan", "elems[1]", "length 5", "elems[0]", "[4, 2]"});
  expect_clean_failure<AxisError>(tape, [&] { associative_scan(compose, Pair{a, a}, {.axis = 2}); },
                                  {"associative_scan", "axis"});
  // fn that does not combine elementwise: the sum over the axis.
  expect_clean_failure<ShapeError>(
      tape, [&] { associative_scan([](const Var& p, const Var& q) { return sum(p + q, {0}, true); }, a); },
      {"associative_scan", "fn", "elems", "elementwise"});
  expect_clean_failure<ShapeError>(
      tape,
      [&] {
        associative_scan([](const std::vector<Var>& p, const std::vector<Var>&) { return std::vector<Var>{p[0]}; },
                         {a, a});
      },
      {"associative_scan", "fn", "1 leaves", "2"});
}

// ---- linear_recurrence --------------------------------------------------------------

// h_t = a_t h_{t-1} + b_t along axis 0 of [T, ...] tensors, element by element.
Tensor recurrence_by_hand(const Tensor& a, const Tensor& b, const Tensor& h0, bool reverse) {
  const std::int64_t n = a.size(0);
  std::vector<Tensor> hs(static_cast<std::size_t>(n));
  Tensor h = h0;
  for (std::int64_t k = 0; k < n; ++k) {
    const std::int64_t t = reverse ? n - 1 - k : k;
    h = add(mul(a[t], h), b[t]);
    hs[static_cast<std::size_t>(t)] = h;
  }
  return stack(std::span<const Tensor>(hs), 0);
}

TEST(LinearRecurrence, EqualsTheLoopInBothDtypesOnEveryAxis) {
  Generator gen(8);
  for (DType dtype : {DType::float64, DType::float32}) {
    for (std::int64_t axis : {0, 1, 2}) {
      for (bool reverse : {false, true}) {
        const Tensor a = normal({5, 3, 4}, 0, 1, gen, dtype), b = normal({5, 3, 4}, 0, 1, gen, dtype);
        const Tensor h0 = normal({3, 4}, 0, 1, gen, dtype);
        const Tensor want = recurrence_by_hand(a, b, h0, reverse);
        // The same problem with time moved to `axis`.
        Axes to{1, 2};
        to.insert(to.begin() + axis, 0);
        Axes back(3);
        for (std::size_t d = 0; d < 3; ++d) back[static_cast<std::size_t>(to[d])] = static_cast<std::int64_t>(d);
        const Tensor got = linear_recurrence(permute(a, to), permute(b, to), h0, {.axis = axis, .reverse = reverse});
        EXPECT_EQ(got.dtype(), dtype);
        EXPECT_LE(max_abs_diff(permute(got, back), want), dtype == f64 ? 1e-13 : 1e-5) << label(5, axis, reverse);
      }
    }
  }
}

TEST(LinearRecurrence, BroadcastsAAndH0) {
  Generator gen(9);
  // A time-invariant decay per feature (LRU, S4D) and one h0 for every batch row.
  const Tensor a = normal({4}, 0, 0.5, gen, f64), b = normal({6, 2, 4}, 0, 1, gen, f64), h0 = normal({4}, 0, 1, gen, f64);
  const Tensor want = recurrence_by_hand(broadcast_to(a, {6, 2, 4}), b, broadcast_to(h0, {2, 4}), false);
  EXPECT_LE(max_abs_diff(linear_recurrence(a, b, h0), want), 1e-13);
}

TEST(LinearRecurrence, EqualsTheAssociativeScanOfPairs) {
  Generator gen(10);
  for (std::int64_t n : {1, 6, 13}) {
    for (bool reverse : {false, true}) {
      Tape tape;
      const Var a = randn(tape, gen, {3, n, 2}), b = randn(tape, gen, {3, n, 2}), h0 = randn(tape, gen, {3, 2});
      const Var h = linear_recurrence(a, b, h0, {.axis = 1, .reverse = reverse});
      // h0 enters as the first step's b: b_first + a_first h0.
      const std::int64_t first = reverse ? n - 1 : 0;
      const Var b_first = unsqueeze(index(b, 1, first) + index(a, 1, first) * h0, 1);
      const Var rest = reverse ? slice(b, 1, 0, n - 1) : slice(b, 1, 1, n);
      const Var b_with_h0 = reverse ? concat({rest, b_first}, 1) : concat({b_first, rest}, 1);
      const Var want = associative_scan(compose, Pair{a, b_with_h0}, {.reverse = reverse, .axis = 1}).second;
      expect_close(h, want, label(n, 1, reverse), 1e-12);
    }
  }
}

// The op's backward (the reverse recurrence) against the hand loop's recorded graph.
TEST(LinearRecurrence, GradientsEqualTheLoops) {
  Generator gen(11);
  for (bool reverse : {false, true}) {
    Tape tape;
    const Var a = randn(tape, gen, {7, 2, 3}), b = randn(tape, gen, {7, 2, 3}), h0 = randn(tape, gen, {2, 3});
    const Var h = linear_recurrence(a, b, h0, {.reverse = reverse});
    std::vector<Var> hs(7);
    Var carry = h0;
    for (std::int64_t k = 0; k < 7; ++k) {
      const std::int64_t t = reverse ? 6 - k : k;
      carry = index(a, 0, t) * carry + index(b, 0, t);
      hs[static_cast<std::size_t>(t)] = carry;
    }
    const Var w = tape.constant(normal({7, 2, 3}, 0, 1, gen, f64));
    const Var inputs[] = {a, b, h0};
    const Var fast[] = {sum(h * w)}, loop[] = {sum(stacked(hs, 0) * w)};
    const auto g1 = tape.grad(fast, inputs), g2 = tape.grad(loop, inputs);
    for (std::size_t k = 0; k < 3; ++k) expect_close(g1[k], g2[k], "input " + std::to_string(k), 1e-12);
  }
}

TEST(LinearRecurrence, ZeroStepsGiveAnEmptyResultAndZeroGradients) {
  Tape tape;
  const Var a = tape.variable(zeros({0, 3}, f64)), b = tape.variable(zeros({0, 3}, f64));
  const Var h0 = tape.variable(ones({3}, f64));
  const Var h = linear_recurrence(a, b, h0);
  EXPECT_EQ(h.shape(), (Shape{0, 3}));
  const Var inputs[] = {h0}, loss[] = {sum(h)};
  const auto g = tape.grad(loss, inputs);
  EXPECT_EQ(max_abs_diff(g[0].value(), zeros({3}, f64)), 0.0);
}

TEST(LinearRecurrence, BadInputIsAClearErrorAndRecordsNothing) {
  Generator gen(12);
  Tape tape;
  const Var a = randn(tape, gen, {4, 3}), b = randn(tape, gen, {4, 3}), h0 = randn(tape, gen, {3});
  const Var a32 = randn(tape, gen, {4, 3}, DType::float32);
  const Var wrong_h0 = randn(tape, gen, {2});
  const Var b_wrong = randn(tape, gen, {5, 3});
  const Var s = randn(tape, gen, {});
  expect_clean_failure<DTypeError>(tape, [&] { linear_recurrence(a32, b, h0); },
                                   {"linear_recurrence", "'a'", "float32", "float64"});
  expect_clean_failure<ShapeError>(tape, [&] { linear_recurrence(a, b, wrong_h0); },
                                   {"linear_recurrence", "h0", "[2]", "[3]"});
  expect_clean_failure<ShapeError>(tape, [&] { linear_recurrence(a, b_wrong, h0); },
                                   {"linear_recurrence", "'a'", "'b'", "[4, 3]", "[5, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { linear_recurrence(s, s, s); }, {"linear_recurrence", "time axis"});
  expect_clean_failure<AxisError>(tape, [&] { linear_recurrence(a, b, h0, {.axis = 2}); },
                                  {"linear_recurrence", "axis"});
}

}  // namespace
}  // namespace recur
