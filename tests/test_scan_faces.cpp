// The faces of scan by their namespaced names (theano::scan, map, reduce, foldl, foldr;
// jax::scan; onnx_scan): the same results as the short forms (recur::scan, map, ...,
// onnx_scan), error messages that name the entry point called, and the options every face
// shares, checked in the engine (truncate_gradient).
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

Var running_sum(S a) { return a[0] + a[1]; }
Var decimal(S a) { return a[1] * 10.0 + a[0]; }  // acc * 10 + digit
std::pair<Var, Var> jax_running_sum(const Var& c, const Var& x) { return {c + x, c + x}; }
std::vector<Var> onnx_running_sum(S a) { return {a[0] + a[1], a[0] + a[1]}; }

TEST(ScanFaces, TheanoByEitherName) {
  Tape tape;
  Var x = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  Var zero = tape.constant(scalar(0.0, f64));
  const ScanOptions o{.sequences = {x}, .outputs_info = {zero}};
  EXPECT_EQ(values(theano::scan(running_sum, o)[0]), (std::vector<double>{1, 3, 6}));
  EXPECT_EQ(values(scan(running_sum, o)[0]), (std::vector<double>{1, 3, 6}));
  auto square = [](S a) { return a[0] * a[0]; };
  EXPECT_EQ(values(theano::map(square, {x})[0]), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(values(map(square, {x})[0]), (std::vector<double>{1, 4, 9}));
  EXPECT_EQ(theano::reduce(decimal, {x}, {zero})[0].value().item(), 123.0);
  EXPECT_EQ(reduce(decimal, {x}, {zero})[0].value().item(), 123.0);
  EXPECT_EQ(theano::foldl(decimal, {x}, {zero})[0].value().item(), 123.0);
  EXPECT_EQ(foldl(decimal, {x}, {zero})[0].value().item(), 123.0);
  EXPECT_EQ(theano::foldr(decimal, {x}, {zero})[0].value().item(), 321.0);
  EXPECT_EQ(foldr(decimal, {x}, {zero})[0].value().item(), 321.0);
  // The types by their namespaced names are the same types.
  static_assert(std::is_same_v<theano::ScanOptions, ScanOptions> && std::is_same_v<theano::Sequence, Sequence>);
}

TEST(ScanFaces, JaxByEitherName) {
  Tape tape;
  Var x = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  Var zero = tape.constant(scalar(0.0, f64));
  auto [c1, ys1] = jax::scan(jax_running_sum, zero, x, jax::ScanOptions{.reverse = true});
  auto [c2, ys2] = scan(jax_running_sum, zero, x, JaxScanOptions{.reverse = true});
  EXPECT_EQ(c1.value().item(), 6.0);
  EXPECT_EQ(c2.value().item(), 6.0);
  EXPECT_EQ(values(ys1), (std::vector<double>{6, 5, 3}));
  EXPECT_EQ(values(ys2), (std::vector<double>{6, 5, 3}));
  auto doubling = [](const Var& c) { return std::pair{c * 2.0, c}; };
  auto [c3, ys3] = jax::scan(doubling, tape.constant(scalar(1.0, f64)), jax::no_xs, {.length = 3});
  EXPECT_EQ(c3.value().item(), 8.0);
  EXPECT_EQ(values(ys3), (std::vector<double>{1, 2, 4}));
}

TEST(ScanFaces, OnnxByEitherName) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var x = tape.constant(tensor({{1.0, 2.0}, {3.0, 4.0}, {5.0, 6.0}}, f64));
  const OnnxScanResult a = onnx_scan(onnx_running_sum, {h}, {x}, OnnxScanOptions{.scan_output_directions = {1}});
  const OnnxScanResult b = onnx_scan(onnx_running_sum, {h}, {x}, OnnxScanOptions{.scan_output_directions = {1}});
  EXPECT_EQ(values(a.final_states[0]), (std::vector<double>{9, 12}));
  EXPECT_EQ(values(b.final_states[0]), (std::vector<double>{9, 12}));
  EXPECT_EQ(values(a.scan_outputs[0]), (std::vector<double>{9, 12, 4, 6, 1, 2}));
  EXPECT_EQ(values(b.scan_outputs[0]), (std::vector<double>{9, 12, 4, 6, 1, 2}));
}

TEST(ScanFaces, TheanoMessagesNameTheEntryPointCalled) {
  Tape tape;
  Var x = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  Var zero = tape.constant(scalar(0.0, f64));
  const ScanOptions too_many{.sequences = {x}, .outputs_info = {zero}, .n_steps = 4};
  expect_clean_failure<ValueError>(tape, [&] { theano::scan(running_sum, too_many); },
                                   {"recur::theano::scan: ", "sequence 0", "n_steps = 4"});
  expect_clean_failure<ValueError>(tape, [&] { scan(running_sum, too_many); }, {"recur::scan: ", "n_steps = 4"});
  auto grows = [](S a) { return a[0].value().item() < 2 ? a[0] * 1.0 : broadcast_to(a[0], {2}); };
  expect_clean_failure<ShapeError>(tape, [&] { theano::map(grows, {x}); }, {"recur::theano::map: ", "iteration 1"});
  expect_clean_failure<ShapeError>(tape, [&] { map(grows, {x}); }, {"recur::map: ", "iteration 1"});
  auto two_outputs = [](S a) { return StepResult{a[0], a[1]}; };  // outputs_info describes one
  // fn = fn: Clang 14 cannot capture a structured binding.
  for (auto [fn, face] : {std::pair{&theano::reduce, "recur::theano::reduce: "}, {&reduce, "recur::reduce: "}})
    expect_clean_failure<ValueError>(tape, [&, fn = fn] { fn(two_outputs, {x}, {zero}, {}, false); },
                                     {face, "returned 2"});
  using Fold = ScanResult (*)(const StepFn&, std::vector<Sequence>, std::vector<OutputInfo>, std::vector<Var>);
  for (auto [fn, face] : {std::pair<Fold, const char*>{&theano::foldl, "recur::theano::foldl: "},
                          {&foldl, "recur::foldl: "},
                          {&theano::foldr, "recur::theano::foldr: "},
                          {&foldr, "recur::foldr: "}})
    expect_clean_failure<ValueError>(tape, [&, fn = fn] { fn(two_outputs, {x}, {zero}, {}); }, {face, "returned 2"});
}

TEST(ScanFaces, JaxAndOnnxMessagesNameTheEntryPointCalled) {
  Tape tape;
  Var h = tape.constant(scalar(0.0, f64));
  Var x = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  expect_clean_failure<ValueError>(tape, [&] { jax::scan(jax_running_sum, h, x, {.length = 5}); },
                                   {"recur::jax::scan: ", "length = 5", "xs of shape [3] has length 3"});
  expect_clean_failure<ValueError>(tape, [&] { scan(jax_running_sum, h, x, {.length = 5}); },
                                   {"recur::scan (jax): ", "length = 5"});
  Var h2 = tape.constant(zeros({2}, f64));
  Var x1 = tape.constant(ones({3, 2}, f64));
  Var x2 = tape.constant(ones({4}, f64));
  auto body = [](S a) { return std::vector<Var>{a[0] + a[1] + a[2]}; };
  expect_clean_failure<ValueError>(
      tape, [&] { onnx_scan(body, {h2}, {x1, x2}); },
      {"onnx_scan: ", "scan inputs differ in length", "scan_inputs[0] of shape [3, 2] has 3 along axis 0",
       "scan_inputs[1] of shape [4] has 4"});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(body, {h2}, {x1, x2}); },
                                   {"recur::onnx_scan: ", "differ in length"});
}

// truncate_gradient means -1 (none) or k >= 0 steps; anything else is an error of the face
// called, before anything is recorded.
TEST(ScanFaces, TruncateGradientBelowMinusOneIsRejectedByEveryFace) {
  Tape tape;
  Var h = tape.constant(scalar(0.0, f64));
  Var x = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  const std::string what = "truncate_gradient = -2";
  const ScanOptions theano_options{.sequences = {x}, .outputs_info = {h}, .truncate_gradient = -2};
  expect_clean_failure<ValueError>(tape, [&] { theano::scan(running_sum, theano_options); },
                                   {"recur::theano::scan: ", what});
  expect_clean_failure<ValueError>(tape, [&] { scan(running_sum, theano_options); }, {"recur::scan: ", what});
  auto square = [](S a) { return a[0] * a[0]; };
  expect_clean_failure<ValueError>(tape, [&] { theano::map(square, {x}, {}, -2); }, {"recur::theano::map: ", what});
  expect_clean_failure<ValueError>(tape, [&] { map(square, {x}, {}, -2); }, {"recur::map: ", what});
  expect_clean_failure<ValueError>(tape, [&] { jax::scan(jax_running_sum, h, x, {.truncate_gradient = -2}); },
                                   {"recur::jax::scan: ", what});
  expect_clean_failure<ValueError>(tape, [&] { scan(jax_running_sum, h, x, {.truncate_gradient = -2}); },
                                   {"recur::scan (jax): ", what});
  Var h2 = tape.constant(zeros({1}, f64));
  Var x2 = tape.constant(ones({3, 1}, f64));
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(onnx_running_sum, {h2}, {x2}, {.truncate_gradient = -2}); },
                                   {"onnx_scan: ", what});
  expect_clean_failure<ValueError>(tape, [&] { onnx_scan(onnx_running_sum, {h2}, {x2}, {.truncate_gradient = -2}); },
                                   {"recur::onnx_scan: ", what});
}

TEST(ScanFaces, TruncateGradientZeroAndMinusOneAreMeaningful) {
  // h_t = w h_{t-1}, h_0 = 1, w = 2, three steps: h_3 = 8. Full BPTT: d h_3 / dw = 3 w^2 = 12;
  // through the last step only: h_2 = 4; through none: 0.
  for (auto [k, want] : {std::pair{-1, 12.0}, {1, 4.0}, {0, 0.0}}) {
    Tape tape;
    Var w = tape.variable(scalar(2.0, f64));
    auto r = theano::scan([](S a) { return a[0] * a[1]; },
                          {.outputs_info = {tape.constant(scalar(1.0, f64))}, .non_sequences = {w}, .n_steps = 3,
                           .truncate_gradient = k, .keep = Keep::last});
    EXPECT_EQ(r[0].value().item(), 8.0);
    EXPECT_EQ(grad(r[0], w).value().item(), want) << "truncate_gradient = " << k;
  }
}

}  // namespace
}  // namespace recur
