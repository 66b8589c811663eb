// JAX's face of scan against the seed's reference loop (003):
//   carry = init; ys = []
//   for x in xs: carry, y = f(carry, x); ys.append(y)
//   return carry, np.stack(ys)
// for tree-shaped carries, xs and ys, reverse, no xs, gradients and errors.
#include <gtest/gtest.h>

#include <optional>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using Two = std::tuple<Var, Var>;
constexpr DType f64 = DType::float64;

Var randn(Tape& tape, Generator& gen, const Shape& shape) { return tape.variable(normal(shape, 0.0, 1.0, gen, f64)); }

void expect_same(const Var& got, const Var& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  EXPECT_LE(max_abs_diff(got.value(), want.value()), 1e-12) << what;
}

// The seed's loop, by hand, for a carry, xs and y that are pairs; with reverse it visits xs
// from the end and puts each y at its x's position. Without xs, f takes the carry only.
template <class F>
std::pair<Two, Two> reference(F f, const Two& init, const std::optional<Two>& xs, std::int64_t length, bool reverse) {
  Two carry = init;
  std::vector<Var> y0(length), y1(length);
  for (std::int64_t i = 0; i < length; ++i) {
    const std::int64_t t = reverse ? length - 1 - i : i;
    std::pair<Two, Two> r;
    if constexpr (std::is_invocable_v<F, const Two&, const Two&>)
      r = f(carry, Two{index(std::get<0>(*xs), 0, t), index(std::get<1>(*xs), 0, t)});
    else
      r = f(carry);
    carry = r.first;
    y0[t] = std::get<0>(r.second);
    y1[t] = std::get<1>(r.second);
  }
  return {carry, Two{stack(std::span<const Var>(y0)), stack(std::span<const Var>(y1))}};
}

// A small RNN-like step with a captured weight: carry (h [3], s []), x (a [3], b []),
// y (h' * 2 - s', sum(h')).
struct Rnn {
  Var w;
  std::pair<Two, Two> operator()(const Two& carry, const Two& x) const {
    const auto& [h, s] = carry;
    const auto& [a, b] = x;
    Var h2 = tanh(h * w + a * b);
    Var s2 = s + sum(h2 * a);
    return {Two{h2, s2}, Two{h2 * 2.0 - s2, sum(h2)}};
  }
  // Without xs: the carry drives itself.
  std::pair<Two, Two> operator()(const Two& carry) const {
    const auto& [h, s] = carry;
    Var h2 = tanh(h * w + s);
    Var s2 = s + sum(h2);
    return {Two{h2, s2}, Two{h2 * s2, sum(h2 * h2)}};
  }
};

struct Loop {
  Tape tape;
  Generator gen{2024};
  Var w = randn(tape, gen, {3});
  Two init{randn(tape, gen, {3}), randn(tape, gen, {})};
  Two xs{randn(tape, gen, {5, 3}), randn(tape, gen, {5})};
};

TEST(ScanJax, SeedReferenceLoopTupleCarryAndTupleYs) {
  for (bool reverse : {false, true}) {
    Loop s;
    Rnn f{s.w};
    auto [carry, ys] = scan(f, s.init, s.xs, {.reverse = reverse});
    auto [want_carry, want_ys] = reference(f, s.init, s.xs, 5, reverse);
    const std::string r = reverse ? "reverse" : "forward";
    expect_same(std::get<0>(carry), std::get<0>(want_carry), r + " carry h");
    expect_same(std::get<1>(carry), std::get<1>(want_carry), r + " carry s");
    expect_same(std::get<0>(ys), std::get<0>(want_ys), r + " ys[0]");
    expect_same(std::get<1>(ys), std::get<1>(want_ys), r + " ys[1]");
    EXPECT_EQ(std::get<0>(ys).shape(), (Shape{5, 3}));
    EXPECT_EQ(std::get<1>(ys).shape(), (Shape{5}));
  }
}

TEST(ScanJax, SeedReferenceLoopWithoutXs) {
  for (bool reverse : {false, true}) {
    Loop s;
    Rnn f{s.w};
    auto [carry, ys] = scan([&](const Two& c) { return f(c); }, s.init, no_xs, {.length = 4, .reverse = reverse});
    auto [want_carry, want_ys] = reference([&](const Two& c) { return f(c); }, s.init, std::nullopt, 4, reverse);
    expect_same(std::get<0>(carry), std::get<0>(want_carry), "carry h");
    expect_same(std::get<1>(carry), std::get<1>(want_carry), "carry s");
    expect_same(std::get<0>(ys), std::get<0>(want_ys), "ys[0]");
    expect_same(std::get<1>(ys), std::get<1>(want_ys), "ys[1]");
  }
}

// Reverse is "reversing the leading axes of xs and ys": a running sum over [1, 2, 3] from
// the end gives ys = [6, 5, 3].
TEST(ScanJax, ReverseKeepsYsAlignedWithXs) {
  Tape tape;
  Var xs = tape.constant(tensor({1.0, 2.0, 3.0}, f64));
  auto step = [](const Var& c, const Var& x) { return std::pair{c + x, c + x}; };
  auto [fwd_c, fwd] = scan(step, Var(scalar(0.0, f64)), xs);
  auto [back_c, back] = scan(step, Var(scalar(0.0, f64)), xs, {.reverse = true});
  EXPECT_EQ(to_vector<double>(fwd.value()), (std::vector<double>{1, 3, 6}));
  EXPECT_EQ(to_vector<double>(back.value()), (std::vector<double>{6, 5, 3}));
  EXPECT_EQ(fwd_c.value().item(), 6.0);
  EXPECT_EQ(back_c.value().item(), 6.0);
}

// Vectors, braced inits and nesting: carry (h, [c0, c1]), xs a braced vector, y a vector.
TEST(ScanJax, VectorsBracedInitializersAndNesting) {
  Tape tape;
  Var x = tape.constant(arange(0.0, 4.0, 1.0, f64));
  Var one = tape.constant(scalar(1.0, f64));
  using Carry = std::tuple<Var, std::vector<Var>>;
  auto [carry, ys] = scan(
      [](const Carry& c, const std::vector<Var>& xv) {
        const auto& [h, cs] = c;
        Var h2 = h + xv[0];
        return std::pair{Carry{h2, {cs[0] * 2.0, cs[1] + h2}}, std::vector<Var>{h2, cs[0]}};
      },
      Carry{one, {one, one}}, {x}, {.length = 4});
  // h: 1, 2, 4, 7; c0: 2, 4, 8, 16; c1: 1+1=2, 4, 8, 15.
  EXPECT_EQ(std::get<0>(carry).value().item(), 7.0);
  EXPECT_EQ(std::get<1>(carry)[0].value().item(), 16.0);
  EXPECT_EQ(std::get<1>(carry)[1].value().item(), 15.0);
  ASSERT_EQ(ys.size(), 2u);
  EXPECT_EQ(to_vector<double>(ys[0].value()), (std::vector<double>{1, 2, 4, 7}));
  EXPECT_EQ(to_vector<double>(ys[1].value()), (std::vector<double>{1, 2, 4, 8}));

  // A braced init is a std::vector<Var> carry.
  auto [c2, y2] = scan([](const std::vector<Var>& c) { return std::pair{std::vector<Var>{c[1], c[0] + c[1]}, c[0]}; },
                       {one, one}, no_xs, {.length = 6});
  EXPECT_EQ(to_vector<double>(y2.value()), (std::vector<double>{1, 1, 2, 3, 5, 8}));
  EXPECT_EQ(c2[0].value().item(), 13.0);
}

// Theano's two-argument scan and JAX's three/four-argument scan side by side.
TEST(ScanJax, OverloadsWithTheanosScan) {
  Tape tape;
  Var x = tape.constant(arange(0.0, 3.0, 1.0, f64));
  auto theano = scan([](std::span<const Var> a) { return a[0] * 2.0; }, {.sequences = {x}});
  auto [c, jax] = scan([](const Var& h, const Var& xi) { return std::pair{h, xi * 2.0}; }, Var(scalar(0.0, f64)), x);
  auto [c4, jax4] = scan([](const Var& h, const Var& xi) { return std::pair{h, xi * 2.0}; }, Var(scalar(0.0, f64)), x,
                         {.length = 3});
  EXPECT_EQ(to_vector<double>(theano[0].value()), to_vector<double>(jax.value()));
  EXPECT_EQ(to_vector<double>(jax4.value()), (std::vector<double>{0, 2, 4}));
}

// Zero steps: the carry is init, ys are empty along a leading axis with y's shape.
TEST(ScanJax, ZeroLength) {
  Tape tape;
  Var h = tape.constant(ones({2}, f64));
  auto [c, ys] = scan([](const Var& c) { return std::pair{c * 2.0, Two{c, sum(c)}}; }, h, no_xs, {.length = 0});
  EXPECT_TRUE(same_node(c, h));
  EXPECT_EQ(std::get<0>(ys).shape(), (Shape{0, 2}));
  EXPECT_EQ(std::get<1>(ys).shape(), (Shape{0}));
  auto [c2, ys2] = scan([](const Var& c, const Var& x) { return std::pair{c + x, x * 3.0}; }, h,
                        Var(zeros({0, 2}, f64)));
  EXPECT_TRUE(same_node(c2, h));
  EXPECT_EQ(ys2.shape(), (Shape{0, 2}));
}

// ---- gradients: scan and the hand loop give the same gradients ----------------------------

// d(loss)/d(init, xs, w) for the scan and the hand loop; loss weighs every result randomly.
void expect_same_gradients(bool reverse, bool with_xs, JaxScanOptions extra = {}) {
  Loop s;
  Rnn f{s.w};
  Var r0 = s.tape.constant(normal({with_xs ? 5 : 4, 3}, 0, 1, s.gen, f64));
  Var r1 = s.tape.constant(normal({with_xs ? 5 : 4}, 0, 1, s.gen, f64));
  auto loss = [&](const Two& carry, const Two& ys) {
    return sum(std::get<0>(carry) * std::get<0>(carry)) + std::get<1>(carry) * 0.5 + sum(std::get<0>(ys) * r0) +
           sum(std::get<1>(ys) * r1);
  };
  std::vector<Var> inputs{s.w, std::get<0>(s.init), std::get<1>(s.init)};
  Var got, want;
  extra.reverse = reverse;
  if (with_xs) {
    inputs.push_back(std::get<0>(s.xs));
    inputs.push_back(std::get<1>(s.xs));
    auto [c, ys] = scan(f, s.init, s.xs, extra);
    got = loss(c, ys);
    auto [wc, wys] = reference(f, s.init, s.xs, 5, reverse);
    want = loss(wc, wys);
  } else {
    auto g = [&](const Two& c) { return f(c); };
    extra.length = 4;
    auto [c, ys] = scan(g, s.init, no_xs, extra);
    got = loss(c, ys);
    auto [wc, wys] = reference(g, s.init, std::nullopt, 4, reverse);
    want = loss(wc, wys);
  }
  EXPECT_NEAR(got.value().item(), want.value().item(), 1e-12);
  const std::vector<Var> g_scan = grad(std::span<const Var>(&got, 1), inputs);
  const std::vector<Var> g_hand = grad(std::span<const Var>(&want, 1), inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ASSERT_EQ(g_scan[i].shape(), inputs[i].shape());
    EXPECT_LE(max_abs_diff(g_scan[i].value(), g_hand[i].value()), 1e-10)
        << "input " << i << (reverse ? " reverse" : " forward") << (with_xs ? "" : " no xs");
  }
}

TEST(ScanJax, GradientsMatchTheHandLoop) {
  for (bool reverse : {false, true})
    for (bool with_xs : {true, false}) expect_same_gradients(reverse, with_xs);
}

TEST(ScanJax, CheckpointedGradientsMatchTheHandLoop) {
  for (bool reverse : {false, true}) expect_same_gradients(reverse, true, {.checkpoint = Checkpoint::every_k(2)});
}

// truncate_gradient = 2: the hand loop detaches the carry where the last 2 steps begin.
TEST(ScanJax, TruncatedGradientMatchesDetachAtTheCut) {
  Loop s;
  Rnn f{s.w};
  auto [c, ys] = scan(f, s.init, s.xs, {.truncate_gradient = 2});
  Var got = sum(std::get<0>(c)) + sum(std::get<1>(ys));
  Two carry = s.init;
  std::vector<Var> y1;
  for (std::int64_t t = 0; t < 5; ++t) {
    if (t == 3) carry = Two{detach(std::get<0>(carry)), detach(std::get<1>(carry))};
    auto [nc, y] = f(carry, Two{index(std::get<0>(s.xs), 0, t), index(std::get<1>(s.xs), 0, t)});
    // Steps before the cut contribute values but no gradient.
    y1.push_back(t < 3 ? detach(std::get<1>(y)) : std::get<1>(y));
    carry = nc;
  }
  Var want = sum(std::get<0>(carry)) + sum(stack(std::span<const Var>(y1)));
  const std::vector<Var> inputs{s.w, std::get<0>(s.xs), std::get<1>(s.xs)};
  const auto g_scan = grad(std::span<const Var>(&got, 1), inputs);
  const auto g_hand = grad(std::span<const Var>(&want, 1), inputs);
  for (std::size_t i = 0; i < inputs.size(); ++i)
    EXPECT_LE(max_abs_diff(g_scan[i].value(), g_hand[i].value()), 1e-10) << "input " << i;
}

// ---- errors --------------------------------------------------------------------------------

TEST(ScanJax, CarryShapeChangeNamesTheLeaf) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var xs = tape.constant(ones({3, 2}, f64));
  expect_clean_failure<ShapeError>(tape, [&] {
    scan([](const Two& c, const Var& x) { return std::pair{Two{std::get<0>(c) + x, concat({std::get<1>(c), x})}, x}; },
         Two{h, h}, xs);
  }, {"recur::scan (jax)", "carry[1]", "iteration 0", "[4]", "[2]"});
  // dtype counts too.
  expect_clean_failure<ShapeError>(tape, [&] {
    scan([](const Var&, const Var& x) { return std::pair{Var(zeros({2}, DType::float32)), x}; }, h, xs);
  }, {"carry", "float32", "float64"});
}

TEST(ScanJax, YShapeChangeNamesTheLeaf) {
  Tape tape;
  Var xs = tape.constant(ones({3, 2}, f64));
  Var zero = tape.constant(scalar(0.0, f64));
  int calls = 0;
  expect_clean_failure<ShapeError>(tape, [&] {
    scan([&](const Var& c, const Var& x) { return std::pair{c, Two{x, ++calls == 2 ? concat({x, x}) : x}}; }, zero,
         xs);
  }, {"ys[1]", "iteration 1", "[4]", "[2]"});
}

TEST(ScanJax, CarryStructureChange) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  expect_clean_failure<ValueError>(tape, [&] {
    scan([](const std::vector<Var>& c) { return std::pair{std::vector<Var>{c[0], c[0], c[0]}, c[0]}; },
         std::vector<Var>{h, h}, no_xs, {.length = 2});
  }, {"carry of 3 leaves", "init has 2", "carry[0], carry[1]"});
}

TEST(ScanJax, LengthMismatches) {
  Tape tape;
  Var h = tape.constant(zeros({2}, f64));
  Var a = tape.constant(ones({3, 2}, f64));
  Var b = tape.constant(ones({4}, f64));
  Var zero_d = tape.constant(scalar(1.0, f64));
  auto f = [](const Var& c, const Two& x) { return std::pair{c + std::get<0>(x), std::get<1>(x)}; };
  expect_clean_failure<ValueError>(tape, [&] { scan(f, h, Two{a, b}); },
                                   {"xs[0]", "[3, 2]", "xs[1]", "[4]", "differ in length"});
  expect_clean_failure<ValueError>(tape, [&] { scan(f, h, Two{a, a}, {.length = 5}); },
                                   {"length = 5", "xs[0]", "[3, 2]", "length 3"});
  expect_clean_failure<ValueError>(tape, [&] { scan([](const Var& c) { return std::pair{c, c}; }, h, no_xs); },
                                   {"length is required"});
  expect_clean_failure<ValueError>(
      tape, [&] { scan([](const Var& c) { return std::pair{c, c}; }, h, no_xs, {.length = -1}); }, {"length = -1"});
  expect_clean_failure<ShapeError>(tape, [&] { scan(f, h, Two{a, zero_d}); }, {"xs[1]", "0-d"});
}

}  // namespace
}  // namespace recur
