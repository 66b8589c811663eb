// scan's rules: step counts, directions, taps, shape rules and their errors, strict,
// outputs kept, and memory under NoGrad.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using S = std::span<const Var>;
using testing::expect_clean_failure;
constexpr DType f64 = DType::float64;

using testing::values;
Var seq(Tape& tape, double n) { return tape.constant(arange(0.0, n, 1.0, f64)); }

TEST(ScanRules, NStepsInferredFromTheShortestSequence) {
  Tape tape;
  auto r = scan([](S a) { return a[0] + a[1]; }, {.sequences = {seq(tape, 5), seq(tape, 3)}});
  EXPECT_EQ(values(r[0]), (std::vector<double>{0, 2, 4}));
}

TEST(ScanRules, SequenceTooShortForNSteps) {
  Tape tape;
  Var s = seq(tape, 3);
  expect_clean_failure<ValueError>(tape, [&] { scan([](S a) { return a[0]; }, {.sequences = {s}, .n_steps = 4}); },
                                   {"recur::scan", "sequence 0", "[3]", "n_steps = 4"});
}

TEST(ScanRules, ZeroStepsGiveALeadingAxisOfZero) {
  Tape tape;
  auto r = scan([](S a) { return a[0] * 2.0; }, {.outputs_info = {Var(ones({2, 3}, f64))}, .n_steps = 0});
  EXPECT_EQ(r[0].shape(), (Shape{0, 2, 3}));
  EXPECT_EQ(r.steps, 0);
}

TEST(ScanRules, NegativeNStepsAndGoBackwardsRunBackwards) {
  Tape tape;
  Var s = seq(tape, 4);
  auto fwd = scan([](S a) { return a[0] * 1.0; }, {.sequences = {s}});
  auto back = scan([](S a) { return a[0] * 1.0; }, {.sequences = {s}, .go_backwards = true});
  auto neg = scan([](S a) { return a[0] * 1.0; }, {.sequences = {s}, .n_steps = -4});
  auto both = scan([](S a) { return a[0] * 1.0; }, {.sequences = {s}, .n_steps = -4, .go_backwards = true});
  EXPECT_EQ(values(fwd[0]), (std::vector<double>{0, 1, 2, 3}));
  EXPECT_EQ(values(back[0]), (std::vector<double>{3, 2, 1, 0}));
  EXPECT_EQ(values(neg[0]), (std::vector<double>{3, 2, 1, 0}));
  EXPECT_EQ(values(both[0]), (std::vector<double>{0, 1, 2, 3}));
}

TEST(ScanRules, GoBackwardsStartsEverySequenceFromItsOwnEnd) {
  // Theano reverses each sequence and then truncates to the shortest: a (0..4) is read at
  // 4, 3, 2 and b (10..12) at 12, 11, 10. A negative n_steps truncates first, then
  // reverses; both together run the last n elements of each sequence forwards.
  Tape tape;
  Var a = seq(tape, 5), b = seq(tape, 3) + 10.0;
  auto add = [](S x) { return x[0] + x[1]; };
  EXPECT_EQ(values(scan(add, {.sequences = {a, b}, .go_backwards = true})[0]), (std::vector<double>{16, 14, 12}));
  EXPECT_EQ(values(scan(add, {.sequences = {a, b}, .n_steps = -3})[0]), (std::vector<double>{14, 12, 10}));
  EXPECT_EQ(values(scan(add, {.sequences = {a, b}, .n_steps = -2, .go_backwards = true})[0]),
            (std::vector<double>{14, 16}));
  // With taps [-1, 0] a feeds 4 steps, reversed from its end: (3, 4), (2, 3), (1, 2).
  auto tapped = scan([](S x) { return x[0] * 10.0 + x[1] + x[2] * 0.0; },
                     {.sequences = {Sequence(a, {-1, 0}), b}, .go_backwards = true});
  EXPECT_EQ(values(tapped[0]), (std::vector<double>{34, 23, 12}));
}

TEST(ScanRules, SequenceTapsPastAndFuture) {
  // taps [-2, 1] over 0..9: first step reads elements 0 and 3; 10 - 3 = 7 steps.
  Tape tape;
  auto r = scan([](S a) { return a[0] * 100.0 + a[1]; }, {.sequences = {Sequence(seq(tape, 10), {-2, 1})}});
  EXPECT_EQ(values(r[0]), (std::vector<double>{3, 104, 205, 306, 407, 508, 609}));
  // A lone positive tap [2]: tap 0 is assumed present, so the first step reads element 2.
  auto p = scan([](S a) { return a[0] * 1.0; }, {.sequences = {Sequence(seq(tape, 5), {2})}});
  EXPECT_EQ(values(p[0]), (std::vector<double>{2, 3, 4}));
}

TEST(ScanRules, OutputTapsReadTheInitialStateInOrder) {
  // Fibonacci with taps [-2, -1]: init[0] is output[-2], init[1] is output[-1].
  Tape tape;
  auto r = scan([](S a) { return a[0] + a[1]; },
                {.outputs_info = {OutputInfo(tape.constant(tensor({0.0, 1.0}, f64)), {-2, -1})}, .n_steps = 6});
  EXPECT_EQ(values(r[0]), (std::vector<double>{1, 2, 3, 5, 8, 13}));
}

TEST(ScanRules, OutputsWithoutInitialState) {
  Tape tape;
  auto r = map([](S a) { return StepResult{a[0] * a[0], a[0] + 1.0}; }, {seq(tape, 3)});
  ASSERT_EQ(r.outputs.size(), 2u);
  EXPECT_EQ(values(r[0]), (std::vector<double>{0, 1, 4}));
  EXPECT_EQ(values(r[1]), (std::vector<double>{1, 2, 3}));
}

TEST(ScanRules, ReduceFoldlFoldr) {
  Tape tape;
  Var s = seq(tape, 4);  // 0 1 2 3
  Var zero = tape.constant(scalar(0.0, f64));
  auto step = [](S a) { return a[1] * 10.0 + a[0]; };  // digits in visiting order
  EXPECT_DOUBLE_EQ(reduce(step, {s}, {zero})[0].value().item(), 123.0);
  EXPECT_DOUBLE_EQ(foldl(step, {s}, {zero})[0].value().item(), 123.0);
  EXPECT_DOUBLE_EQ(foldr(step, {s}, {zero})[0].value().item(), 3210.0);
}

TEST(ScanRules, ArgumentOrderSequencesThenOutputsThenNonSequences) {
  Tape tape;
  Var a = seq(tape, 2), b = tape.constant(tensor({10.0, 20.0}, f64));
  Var n1 = tape.constant(scalar(1000.0, f64)), n2 = tape.constant(scalar(5000.0, f64));
  std::vector<double> seen;
  scan(
      [&](S x) {
        for (const auto& v : x) seen.push_back(v.value().item());
        return StepResult{x[2] + 0.0, x[3] + 0.0};
      },
      {.sequences = {a, b},
       .outputs_info = {OutputInfo(tape.constant(scalar(7.0, f64))), OutputInfo(tape.constant(scalar(8.0, f64)))},
       .non_sequences = {n1, n2},
       .n_steps = 1});
  EXPECT_EQ(seen, (std::vector<double>{0, 10, 7, 8, 1000, 5000}));
}

TEST(ScanRules, OutputShapeChangeThrowsAndLeavesTapeAndSharedAsTheyWere) {
  Shared counter(scalar(0.0, f64), "counter");
  Tape tape;
  Var h0 = tape.constant(zeros({2}, f64));
  Var s = tape.constant(zeros({5, 2}, f64));
  expect_clean_failure<ShapeError>(
      tape,
      [&] {
        scan(
            [&](S a) {
              Var next = a[0] + a[1];
              if (Var(counter).value().item() >= 2.0) next = concat({next, next});  // grows at iteration 2
              return StepResult({next}, Updates{{counter, Var(counter) + 1.0}});
            },
            {.sequences = {s}, .outputs_info = {h0}});
      },
      {"recur::scan", "output 0", "iteration 2", "[4]", "[2]"});
  EXPECT_EQ(counter.value().item(), 0.0);
  EXPECT_EQ(counter.version(), 0u);
}

TEST(ScanRules, MapLikeOutputsKeepTheirFirstShape) {
  Tape tape;
  Var s = seq(tape, 3);
  expect_clean_failure<ShapeError>(
      tape, [&] { map([](S a) { return a[0].value().item() < 1 ? a[0] * 1.0 : broadcast_to(a[0], {2}); }, {s}); },
      {"output 0", "iteration 1", "[2]", "[]"});
}

TEST(ScanRules, StrictRejectsCapturedVariablesAndShared) {
  Shared w(ones({2}, f64), "w");
  Tape tape;
  Var s = tape.constant(ones({3, 2}, f64));
  Var outer = tape.constant(ones({2}, f64));
  expect_clean_failure<ValueError>(
      tape, [&] { scan([&](S a) { return a[0] * outer; }, {.sequences = {s}, .strict = true}); },
      {"strict", "[2]"});
  expect_clean_failure<ValueError>(
      tape, [&] { scan([&](S a) { return a[0] * Var(w); }, {.sequences = {s}, .strict = true}); },
      {"strict", "'w'"});
  // Passed in non_sequences, both are fine; without strict, captures are fine too.
  Var wv = w;
  auto ok = scan([](S a) { return a[0] * a[1] * a[2]; }, {.sequences = {s}, .non_sequences = {outer, wv}, .strict = true});
  EXPECT_EQ(ok[0].shape(), (Shape{3, 2}));
  auto lax = scan([&](S a) { return a[0] * outer * Var(w); }, {.sequences = {s}});
  EXPECT_EQ(lax[0].shape(), (Shape{3, 2}));
}

TEST(ScanRules, WrongNumberOfOutputs) {
  Tape tape;
  Var s = seq(tape, 3), zero = tape.constant(scalar(0.0, f64));
  expect_clean_failure<ValueError>(
      tape, [&] { scan([](S a) { return StepResult{a[0], a[1]}; }, {.sequences = {s}, .outputs_info = {zero}}); },
      {"returned 2 outputs", "describes 1"});
}

TEST(ScanRules, KeepLastReturnsOnlyTheFinalValue) {
  Tape tape;
  auto r = scan([](S a) { return a[0] + 1.0; },
                {.outputs_info = {Var(scalar(0.0, f64))}, .n_steps = 5, .keep = Keep::last});
  EXPECT_EQ(r[0].shape(), Shape{});
  EXPECT_DOUBLE_EQ(r[0].value().item(), 5.0);
}

TEST(ScanRules, NoGradKeepLastUsesMemoryIndependentOfTheNumberOfSteps) {
  Tape tape;
  NoGrad off;
  Var x = tape.constant(full({32}, 1e-6, f64));
  auto run = [&](std::int64_t steps) {
    const auto before = tape.size();
    auto r = scan([&](S a) { return tanh(a[0] + x); },
                  {.outputs_info = {Var(zeros({32}, f64))}, .n_steps = steps, .keep = Keep::last});
    return std::pair{tape.size() - before, r[0].value().at({0})};
  };
  const auto [nodes_small, v_small] = run(10);
  const auto before_pool = memory::pool_stats();
  const auto [nodes_big, v_big] = run(1'000'000);
  const auto after_pool = memory::pool_stats();
  EXPECT_EQ(nodes_small, nodes_big);  // the tape did not grow with the steps
  EXPECT_LT(after_pool.system_allocations - before_pool.system_allocations, 16u);
  EXPECT_GT(v_big, v_small);
}

// set_value_at_position from the guide: zeros shaped like the model with one value set,
// for each (location, value) pair.
TEST(SeedTheano, SetValueAtPosition) {
  Tape tape;
  Var locations = tape.constant(from_vector<std::int64_t>({1, 1, 2, 3}, {2, 2}));
  Var vals = tape.constant(tensor({42.0, 50.0}));
  Var model = tape.constant(zeros({5, 5}));
  auto r = scan(
      [](S a) {
        const Tensor& loc = a[0].value();
        Tensor mask = zeros_like(a[2].value());
        mask.data<float>()[loc.at<std::int64_t>({0}) * 5 + loc.at<std::int64_t>({1})] = 1.0f;
        return StepResult(Var(mask) * a[1]);
      },
      {.sequences = {locations, vals}, .non_sequences = {model}});
  const Tensor out = r[0].value();
  ASSERT_EQ(out.shape(), (Shape{2, 5, 5}));
  for (int t = 0; t < 2; ++t)
    for (int i = 0; i < 5; ++i)
      for (int j = 0; j < 5; ++j) {
        const double expected = (t == 0 && i == 1 && j == 1) ? 42 : (t == 1 && i == 2 && j == 3) ? 50 : 0;
        EXPECT_EQ(out.at({t, i, j}), expected);
      }
}

}  // namespace
}  // namespace recur
