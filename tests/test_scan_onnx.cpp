// ONNX's face of scan: the seed's test_scan_sum (opset 8, batched) and test_scan9_sum with
// their values, every axis and direction against a loop that follows the operator's text
// literally (index along the axis from the chosen end, append or prepend), gradients, errors.
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

// The seed's body: sum_out = Add(sum_in, next); scan_out = Identity(sum_out).
std::vector<Var> sum_body(S a) {
  Var sum_out = a[0] + a[1];
  return {sum_out, sum_out};
}

TEST(ScanOnnx, SeedScanSumOpset8Batched) {
  Tape tape;
  Var initial = tape.constant(tensor({{0.0, 0.0}}));                        // [1, 2]
  Var x = tape.constant(tensor({{{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}}));  // [1, 3, 2]
  auto [y, z] = onnx_scan(sum_body, {initial}, {x}, {.scan_input_axes = {1}, .scan_output_axes = {1}});
  ASSERT_EQ(y.size(), 1u);
  ASSERT_EQ(z.size(), 1u);
  EXPECT_EQ(y[0].dtype(), DType::float32);
  EXPECT_EQ(y[0].shape(), (Shape{1, 2}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{9, 12}));
  EXPECT_EQ(z[0].shape(), (Shape{1, 3, 2}));
  EXPECT_EQ(values(z[0]), (std::vector<double>{1, 2, 4, 6, 9, 12}));
}

TEST(ScanOnnx, SeedScan9Sum) {
  Tape tape;
  Var initial = tape.constant(tensor({0.0, 0.0}));                       // [2]
  Var x = tape.constant(tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));  // [3, 2]
  auto [y, z] = onnx_scan(sum_body, {initial}, {x});
  EXPECT_EQ(y[0].shape(), (Shape{2}));
  EXPECT_EQ(values(y[0]), (std::vector<double>{9, 12}));
  EXPECT_EQ(z[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(values(z[0]), (std::vector<double>{1, 2, 4, 6, 9, 12}));
}

// Directions on the seed's sum: a reversed input sums from the end; a prepended output is
// in reverse order of iteration.
TEST(ScanOnnx, DirectionsOnTheSeedSum) {
  Tape tape;
  Var initial = tape.constant(tensor({0.0, 0.0}));
  Var x = tape.constant(tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}));
  auto in_rev = onnx_scan(sum_body, {initial}, {x}, {.scan_input_directions = {1}});
  EXPECT_EQ(values(in_rev.scan_outputs[0]), (std::vector<double>{5, 6, 8, 10, 9, 12}));
  auto out_rev = onnx_scan(sum_body, {initial}, {x}, {.scan_output_directions = {1}});
  EXPECT_EQ(values(out_rev.scan_outputs[0]), (std::vector<double>{9, 12, 4, 6, 1, 2}));
  auto both = onnx_scan(sum_body, {initial}, {x}, {.scan_input_directions = {1}, .scan_output_directions = {1}});
  EXPECT_EQ(values(both.scan_outputs[0]), (std::vector<double>{9, 12, 8, 10, 5, 6}));
  EXPECT_EQ(values(both.final_states[0]), (std::vector<double>{9, 12}));
}

// ---- every option against the operator's text ------------------------------------------------

struct Layout {
  Shape shape;
  std::int64_t axis;
};

struct Case {
  Layout l1, l2;  // scan inputs: elements [2, 3] and [3]
  std::int64_t d1, d2;
  std::int64_t oa1, oa2;  // scan outputs: elements [2, 3] and [2]
  std::int64_t od1, od2;
  bool checkpoint;
};

struct Problem {
  Tape tape;
  Generator gen;
  Var h0, x1, x2, w;
  explicit Problem(const Case& c, std::uint64_t seed) : gen(seed) {
    h0 = tape.variable(normal({2, 3}, 0, 1, gen, f64));
    x1 = tape.variable(normal(c.l1.shape, 0, 1, gen, f64));
    x2 = tape.variable(normal(c.l2.shape, 0, 1, gen, f64));
    w = tape.variable(normal({3}, 0, 1, gen, f64));
  }
  // states (h), elements (e1 [2, 3], e2 [3]) -> new h, outputs [2, 3] and [2].
  std::vector<Var> body(S a) const {
    Var h = tanh(a[0] * w + a[1] + a[2]);
    return {h, h * a[2], sum(h, {1})};
  }
};

// Scan as the operator's pseudocode says: element t of each input is input<axis>[t] (from
// the end when reversed); each output element is appended or prepended along its axis.
OnnxScanResult by_hand(const Problem& p, const Case& c) {
  const std::int64_t L = 4;
  Var h = p.h0, out1, out2;
  auto add = [](Var& out, const Var& e, std::int64_t axis, std::int64_t prepend) {
    Var u = unsqueeze(e, axis);
    out = !out.defined() ? u : prepend ? concat({u, out}, axis) : concat({out, u}, axis);
  };
  for (std::int64_t t = 0; t < L; ++t) {
    Var e1 = index(p.x1, c.l1.axis, c.d1 ? L - 1 - t : t);
    Var e2 = index(p.x2, c.l2.axis, c.d2 ? L - 1 - t : t);
    const std::vector<Var> args{h, e1, e2};
    std::vector<Var> r = p.body(args);
    h = r[0];
    add(out1, r[1], c.oa1, c.od1);
    add(out2, r[2], c.oa2, c.od2);
  }
  return {{h}, {out1, out2}};
}

OnnxScanResult by_scan(const Problem& p, const Case& c) {
  return onnx_scan([&](S a) { return p.body(a); }, {p.h0}, {p.x1, p.x2},
                   {.scan_input_axes = {c.l1.axis, c.l2.axis},
                    .scan_input_directions = {c.d1, c.d2},
                    .scan_output_axes = {c.oa1, c.oa2},
                    .scan_output_directions = {c.od1, c.od2},
                    .checkpoint = c.checkpoint ? Checkpoint::every_k(3) : Checkpoint::none()});
}

std::vector<Case> all_cases() {
  const std::vector<Layout> l1s{{{2, 4, 3}, 1}, {{2, 4, 3}, -2}, {{4, 2, 3}, 0}, {{2, 3, 4}, -1}};
  const std::vector<Layout> l2s{{{4, 3}, 0}, {{3, 4}, -1}, {{3, 4}, 1}};
  const std::vector<std::int64_t> oa1s{0, 1, 2, -1, -3}, oa2s{0, 1, -1, -2};
  std::vector<Case> cases;
  int n = 0;
  for (const auto& l1 : l1s)
    for (const auto& l2 : l2s)
      for (std::int64_t d = 0; d < 4; ++d, ++n)
        cases.push_back({l1, l2, d & 1, d >> 1, oa1s[n % 5], oa2s[n % 4], (n / 2) & 1, n & 1, n % 3 == 0});
  return cases;
}

std::string describe(const Case& c) {
  return "in axes " + std::to_string(c.l1.axis) + "," + std::to_string(c.l2.axis) + " dirs " + std::to_string(c.d1) +
         "," + std::to_string(c.d2) + " out axes " + std::to_string(c.oa1) + "," + std::to_string(c.oa2) + " dirs " +
         std::to_string(c.od1) + "," + std::to_string(c.od2) + (c.checkpoint ? " checkpoint" : "");
}

Var loss_of(const OnnxScanResult& r, Generator& gen) {
  Var loss = sum(r.final_states[0] * r.final_states[0]);
  for (const auto& o : r.scan_outputs) loss = loss + sum(o * Var(normal(o.shape(), 0, 1, gen, f64)));
  return loss;
}

TEST(ScanOnnx, EveryAxisAndDirectionMatchesTheOperatorText) {
  std::uint64_t seed = 1;
  for (const Case& c : all_cases()) {
    SCOPED_TRACE(describe(c));
    Problem p(c, seed++);
    const OnnxScanResult want = by_hand(p, c);
    const OnnxScanResult got = by_scan(p, c);
    ASSERT_EQ(got.scan_outputs.size(), 2u);
    for (std::size_t k = 0; k < 2; ++k) {
      ASSERT_EQ(got.scan_outputs[k].shape(), want.scan_outputs[k].shape());
      EXPECT_LE(max_abs_diff(got.scan_outputs[k].value(), want.scan_outputs[k].value()), 1e-12);
    }
    EXPECT_LE(max_abs_diff(got.final_states[0].value(), want.final_states[0].value()), 1e-12);
    {  // the same without recording
      NoGrad off;
      const OnnxScanResult plain = by_scan(p, c);
      for (std::size_t k = 0; k < 2; ++k)
        EXPECT_LE(max_abs_diff(plain.scan_outputs[k].value(), want.scan_outputs[k].value()), 1e-12);
    }
    // Gradients (float64) of the same random loss through both.
    Generator g1(seed), g2(seed);
    Var l_scan = loss_of(got, g1), l_hand = loss_of(want, g2);
    const std::vector<Var> inputs{p.h0, p.x1, p.x2, p.w};
    const auto g_scan = grad(S(&l_scan, 1), inputs);
    const auto g_hand = grad(S(&l_hand, 1), inputs);
    for (std::size_t i = 0; i < inputs.size(); ++i)
      EXPECT_LE(max_abs_diff(g_scan[i].value(), g_hand[i].value()), 1e-10) << "input " << i;
  }
}

TEST(ScanOnnx, ZeroLength) {
  Tape tape;
  Var initial = tape.constant(tensor({1.0, 2.0}, f64));
  Var x = tape.constant(zeros({0, 2}, f64));
  auto r = onnx_scan(sum_body, {initial}, {x}, {.scan_output_axes = {-1}});
  EXPECT_TRUE(same_node(r.final_states[0], initial));
  EXPECT_EQ(r.scan_outputs[0].shape(), (Shape{2, 0}));
  auto r2 = onnx_scan(sum_body, {initial}, {Var(zeros({2, 0}, f64))}, {.scan_input_axes = {1}});
  EXPECT_EQ(r2.scan_outputs[0].shape(), (Shape{0, 2}));
}

// ---- errors ----------------------------------------------------------------------------------

TEST(ScanOnnx, InputsOfDifferentLengths) {
  Tape tape;
  Var h = tape.constant(zeros({2, 3}, f64));
  Var x1 = tape.constant(zeros({2, 4, 3}, f64));
  Var x2 = tape.constant(zeros({5, 3}, f64));
  expect_clean_failure<ValueError>(
      tape, [&] { onnx_scan([](S a) { return std::vector<Var>{a[0] + a[1] + a[2]}; }, {h}, {x1, x2}, {.scan_input_axes = {1, 0}}); },
      {"recur::onnx_scan", "scan_inputs[0] of shape [2, 4, 3] has 4 along axis 1",
       "scan_inputs[1] of shape [5, 3] has 5 along axis 0"});
}

TEST(ScanOnnx, StateShapeChange) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var x = tape.constant(ones({3, 2}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { onnx_scan([](S a) { return std::vector<Var>{concat({a[0], a[1]})}; }, {h}, {x}); },
                                   {"state 0", "iteration 0", "[4]", "[2]"});
  expect_clean_failure<ShapeError>(tape, [&] {
    onnx_scan([](S) { return std::vector<Var>{Var(zeros({2}, DType::float32))}; }, {h}, {x});
  }, {"state 0", "float32", "float64"});
}

TEST(ScanOnnx, ScanOutputShapeChange) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var x = tape.constant(ones({3, 2}, f64));
  int calls = 0;
  expect_clean_failure<ShapeError>(tape, [&] {
    onnx_scan([&](S a) { return std::vector<Var>{a[0], ++calls == 2 ? concat({a[1], a[1]}) : a[1]}; }, {h}, {x});
  }, {"scan output 0", "iteration 1", "[4]", "[2]"});
}

TEST(ScanOnnx, BadAttributes) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var x = tape.constant(ones({3, 2}, f64));
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_input_directions = {2}}); },
                                   {"scan_input_directions[0] = 2"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_output_directions = {0, -1}}); },
                                   {"scan_output_directions[1] = -1"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_input_axes = {0, 0}}); },
                                   {"scan_input_axes has 2 entries for 1 scan inputs"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_output_axes = {0, 0}}); },
                                   {"scan_output_axes has 2 entries for 1 scan outputs"});
  expect_clean_failure<AxisError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_input_axes = {2}}); },
                                  {"scan_input_axes[0]", "[3, 2]"});
  expect_clean_failure<AxisError>(tape, [&] { onnx_scan(sum_body, {h}, {x}, {.scan_output_axes = {-3}}); },
                                  {"stack axis of scan output 0", "= -3"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan([](S) { return std::vector<Var>{}; }, {h}, {x}); },
                                   {"returned 0 values", "1 states"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(sum_body, {h}, {}); }, {"no scan inputs"});
}

}  // namespace
}  // namespace recur
