// Scan's per-batch-element lengths (the `lengths` option of the Theano and JAX faces)
// against running each element alone: batch element b, its first lengths[b] steps,
// scanned with no lengths. Values, zeros at the padded steps, and gradients (against the
// alone runs summed over elements, and against finite differences in float64); with taps,
// reverse, truncation and checkpointing; bad lengths.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
constexpr DType f64 = DType::float64;
constexpr std::int64_t kSteps = 5, kBatch = 4, kIn = 3, kHidden = 2;
const std::vector<std::int64_t> kLengths{5, 2, 0, 3};  // T and 0 included

// x [T + 1, B, D] (a tap -1 reads one element more), h0 [2, B, H] (taps -2 and -1), w, u.
struct Inputs {
  Tensor x, h0, w, u;
};

Inputs random_inputs(std::uint64_t seed) {
  Generator gen(seed);
  return {normal({kSteps + 1, kBatch, kIn}, 0, 1, gen, f64), normal({2, kBatch, kHidden}, 0, 1, gen, f64),
          normal({kIn, kHidden}, 0, 0.7, gen, f64), normal({kHidden, kHidden}, 0, 0.7, gen, f64)};
}

struct Vars {
  Var x, h0, w, u;
  std::vector<Var> all() const { return {x, h0, w, u}; }
};

Vars variables(Tape& tape, const Inputs& in) {
  return {tape.variable(in.x), tape.variable(in.h0), tape.variable(in.w), tape.variable(in.u)};
}

// Element b alone: its column of x and h0 (batch of 1), x cut to its first `length` steps.
Vars alone(const Vars& v, std::int64_t b, std::int64_t length, std::int64_t x_extra) {
  return {slice(slice(v.x, 1, b, b + 1), 0, 0, length + x_extra), slice(v.h0, 1, b, b + 1), v.w, v.u};
}

struct Case {
  bool reverse = false;
  std::int64_t truncate = -1;
  Keep keep = Keep::all;
  Checkpoint checkpoint{};
  std::vector<std::int64_t> lengths = kLengths;
};

// Every element longer than the truncation below: truncation may then drop early iterations
// from the tape for all, which must keep what taps of an element's last steps read.
const std::vector<std::int64_t> kAllLong{5, 3, 4, 2};

std::string describe(const Case& c) {
  return std::string(c.reverse ? "reverse" : "forward") + ", truncate " + std::to_string(c.truncate) +
         (c.keep == Keep::all ? ", all" : ", last") + (c.checkpoint.recomputes() ? ", checkpointed" : "") + (c.lengths == kLengths ? "" : ", all long");
}

// Rows of element b's steps among T stacked ones: forward its first L; Theano's
// go_backwards stacks in loop order, so its L steps are the last L rows.
std::int64_t first_row(bool loop_order_reversed, std::int64_t length) {
  return loop_order_reversed ? kSteps - length : 0;
}

// Compares element b of a batched result (batch on `axis`) with the alone run's, and checks
// the padded rows are zero. `rows` [first, first + L) of axis 0 hold its steps when stacked.
void expect_element(const Var& batched, const Var& single, std::int64_t b, bool stacked, std::int64_t first,
                    std::int64_t length, const std::string& what) {
  const Tensor mine = slice(batched.value(), stacked ? 1 : 0, b, b + 1);
  if (!stacked) {
    EXPECT_LE(max_abs_diff(mine, single.value()), 1e-12) << what;
    return;
  }
  EXPECT_LE(max_abs_diff(slice(mine, 0, first, first + length), single.value()), 1e-12) << what;
  const Tensor before = slice(mine, 0, 0, first), after = slice(mine, 0, first + length, kSteps);
  EXPECT_EQ(max_abs_diff(before, zeros_like(before)), 0.0) << what << ": padded steps before";
  EXPECT_EQ(max_abs_diff(after, zeros_like(after)), 0.0) << what << ": padded steps after";
}

// The weighted sum whose gradient the tests compare; weights for element b's rows of a
// batched output give the same loss for its alone run.
Var weighted(const Var& out, const Tensor& weight) { return sum(out * out.tape().constant(weight)); }

Tensor element_weight(const Tensor& weight, std::int64_t b, bool stacked, std::int64_t first, std::int64_t length) {
  return stacked ? slice(slice(weight, 1, b, b + 1), 0, first, first + length) : slice(weight, 0, b, b + 1);
}

void expect_same_grads(const std::vector<Var>& got, const std::vector<Var>& want, const std::string& what) {
  const char* names[] = {"x", "h0", "w", "u"};
  for (std::size_t i = 0; i < got.size(); ++i) {
    ASSERT_EQ(got[i].shape(), want[i].shape()) << what;
    EXPECT_LE(max_abs_diff(got[i].value(), want[i].value()), 1e-11) << what << ": gradient of " << names[i];
  }
}

// ---- Theano's face: sequence taps {-1, 0}, output taps {-2, -1}, an output not fed back --

StepResult theano_step(std::span<const Var> a) {
  const Var &x_prev = a[0], &x = a[1], &h2 = a[2], &h1 = a[3], &w = a[4], &u = a[5];
  Var h = tanh(matmul(x + x_prev * 0.5, w) + matmul(h1, u) + h2 * 0.3);
  return {h, h * h + 1.0};
}

ScanResult theano_run(const Vars& v, const Case& c, SequenceLengths lengths) {
  return scan(theano_step, {.sequences = {Sequence(v.x, {-1, 0})},
                            .outputs_info = {OutputInfo(v.h0, {-2, -1}), OutputInfo()},
                            .non_sequences = {v.w, v.u},
                            .truncate_gradient = c.truncate,
                            .go_backwards = c.reverse,
                            .keep = c.keep,
                            .checkpoint = c.checkpoint,
                            .lengths = std::move(lengths)});
}

void check_theano_against_alone(const Case& c) {
  const std::string what = "theano: " + describe(c);
  const Inputs in = random_inputs(7);
  const bool stacked = c.keep == Keep::all;
  Generator gen(11);
  const Tensor wh = normal(stacked ? Shape{kSteps, kBatch, kHidden} : Shape{kBatch, kHidden}, 0, 1, gen, f64);
  const Tensor wy = normal(wh.shape(), 0, 1, gen, f64);

  Tape batched_tape;
  const Vars bv = variables(batched_tape, in);
  const ScanResult batched = theano_run(bv, c, c.lengths);
  const Var batched_loss = weighted(batched[0], wh) + weighted(batched[1], wy);

  Tape alone_tape;
  const Vars av = variables(alone_tape, in);
  Var alone_loss = alone_tape.constant(scalar(0.0, f64));
  for (std::int64_t b = 0; b < kBatch; ++b) {
    const std::int64_t length = c.lengths[b], first = first_row(c.reverse, length);
    const ScanResult single = theano_run(alone(av, b, length, 1), c, {});
    const std::string at = what + ", element " + std::to_string(b);
    expect_element(batched[0], single[0], b, stacked, first, length, at + ", h");
    alone_loss = alone_loss + weighted(single[0], element_weight(wh, b, stacked, first, length));
    if (length > 0) {  // alone with no steps, an output not fed back has no shape nor last value
      expect_element(batched[1], single[1], b, stacked, first, length, at + ", y");
      alone_loss = alone_loss + weighted(single[1], element_weight(wy, b, stacked, first, length));
    } else {
      const Tensor y = slice(batched[1].value(), stacked ? 1 : 0, b, b + 1);
      EXPECT_EQ(max_abs_diff(y, zeros_like(y)), 0.0) << at << ": y of an element with no steps";
    }
  }
  expect_same_grads(grad(std::vector<Var>{batched_loss}, bv.all()), grad(std::vector<Var>{alone_loss}, av.all()),
                    what);
}

TEST(ScanLengths, TheanoMatchesEachSequenceAlone) {
  for (bool reverse : {false, true})
    for (std::int64_t truncate : {-1, 0, 1, 2, 4})
      for (Keep keep : {Keep::all, Keep::last}) {
        check_theano_against_alone({reverse, truncate, keep, {}});
        check_theano_against_alone({reverse, truncate, keep, {}, kAllLong});
      }
}

TEST(ScanLengths, TheanoCheckpointedMatchesEachSequenceAlone) {
  for (bool reverse : {false, true})
    for (const Checkpoint& ck : {Checkpoint::every_k(2), Checkpoint::snapshots(2), Checkpoint::auto_sqrt()}) {
      check_theano_against_alone({reverse, -1, Keep::all, ck});
      check_theano_against_alone({reverse, 2, Keep::last, ck});
    }
}

// ---- JAX's face: carry (h [B, H], c [B, H]), ys (h - c, sum over features) --------------

using Carry = std::tuple<Var, Var>;

struct JaxStep {
  Var w, u;
  std::pair<Carry, std::pair<Var, Var>> operator()(const Carry& carry, const Var& x) const {
    const auto& [h, c] = carry;
    Var h2 = tanh(matmul(x, w) + matmul(h, u));
    Var c2 = c * 0.9 + h2;
    return {Carry{h2, c2}, {h2 - c2, sum(h2 * c2, {1})}};
  }
};

struct JaxOut {
  Carry carry;
  std::pair<Var, Var> ys;
};

// x's first T rows are xs; h0[0] and h0[1] are the carry's two leaves.
JaxOut jax_run(const Vars& v, const Case& c, SequenceLengths lengths) {
  const Var xs = slice(v.x, 0, 0, v.x.size(0) - 1);
  auto [carry, ys] = jax::scan(JaxStep{v.w, v.u}, Carry{index(v.h0, 0, 0), index(v.h0, 0, 1)}, xs,
                               {.reverse = c.reverse, .truncate_gradient = c.truncate, .checkpoint = c.checkpoint,
                                .lengths = std::move(lengths)});
  return {carry, ys};
}

void check_jax_against_alone(const Case& c) {
  const std::string what = "jax: " + describe(c);
  const Inputs in = random_inputs(8);
  Generator gen(12);
  const Tensor wc = normal({kBatch, kHidden}, 0, 1, gen, f64), wd = normal({kBatch, kHidden}, 0, 1, gen, f64);
  const Tensor wy = normal({kSteps, kBatch, kHidden}, 0, 1, gen, f64), wz = normal({kSteps, kBatch}, 0, 1, gen, f64);

  Tape batched_tape;
  const Vars bv = variables(batched_tape, in);
  const JaxOut batched = jax_run(bv, c, c.lengths);
  const Var batched_loss = weighted(std::get<0>(batched.carry), wc) + weighted(std::get<1>(batched.carry), wd) +
                           weighted(batched.ys.first, wy) + weighted(batched.ys.second, wz);

  Tape alone_tape;
  const Vars av = variables(alone_tape, in);
  Var alone_loss = alone_tape.constant(scalar(0.0, f64));
  for (std::int64_t b = 0; b < kBatch; ++b) {
    const std::int64_t length = c.lengths[b];  // ys[t] belongs to xs[t], reverse or not
    const JaxOut single = jax_run(alone(av, b, length, 1), c, {});
    const std::string at = what + ", element " + std::to_string(b);
    expect_element(std::get<0>(batched.carry), std::get<0>(single.carry), b, false, 0, length, at + ", h");
    expect_element(std::get<1>(batched.carry), std::get<1>(single.carry), b, false, 0, length, at + ", c");
    expect_element(batched.ys.first, single.ys.first, b, true, 0, length, at + ", ys.first");
    expect_element(batched.ys.second, single.ys.second, b, true, 0, length, at + ", ys.second");
    alone_loss = alone_loss + weighted(std::get<0>(single.carry), element_weight(wc, b, false, 0, length)) +
                 weighted(std::get<1>(single.carry), element_weight(wd, b, false, 0, length)) +
                 weighted(single.ys.first, element_weight(wy, b, true, 0, length)) +
                 weighted(single.ys.second, element_weight(wz, b, true, 0, length));
  }
  expect_same_grads(grad(std::vector<Var>{batched_loss}, bv.all()), grad(std::vector<Var>{alone_loss}, av.all()),
                    what);
}

TEST(ScanLengths, JaxMatchesEachSequenceAlone) {
  for (bool reverse : {false, true})
    for (std::int64_t truncate : {-1, 0, 1, 3}) {
      check_jax_against_alone({reverse, truncate, Keep::all, {}});
      check_jax_against_alone({reverse, truncate, Keep::all, {}, kAllLong});
    }
}

TEST(ScanLengths, JaxCheckpointedMatchesEachSequenceAlone) {
  for (bool reverse : {false, true})
    for (const Checkpoint& ck : {Checkpoint::every_k(2), Checkpoint::snapshots(3)}) {
      check_jax_against_alone({reverse, -1, Keep::all, ck});
      check_jax_against_alone({reverse, 2, Keep::all, ck});
    }
}

// ---- finite differences -------------------------------------------------------------------

Var flat(const Var& v) { return reshape(v, {v.numel()}); }

TEST(ScanLengths, GradientsMatchFiniteDifferences) {
  const Inputs in = random_inputs(9);
  const std::vector<Tensor> inputs{in.x, in.h0, in.w, in.u};
  // Truncated gradients are not derivatives: the alone runs above check those.
  for (bool reverse : {false, true})
    for (const Checkpoint& ck : {Checkpoint::none(), Checkpoint::every_k(2)}) {
      const Case c{reverse, -1, Keep::all, ck};
      auto theano_f = [&](std::span<const Var> a) {
        const ScanResult r = theano_run({a[0], a[1], a[2], a[3]}, c, kLengths);
        return concat({flat(r[0]), flat(r[1])});
      };
      auto jax_f = [&](std::span<const Var> a) {
        const JaxOut r = jax_run({a[0], a[1], a[2], a[3]}, c, kLengths);
        return concat({flat(std::get<0>(r.carry)), flat(std::get<1>(r.carry)), flat(r.ys.first), flat(r.ys.second)});
      };
      const GradCheckReport theano_report = check_gradients(theano_f, inputs);
      EXPECT_TRUE(theano_report.ok) << "theano: " << describe(c) << ": " << theano_report.failure;
      const GradCheckReport jax_report = check_gradients(jax_f, inputs);
      EXPECT_TRUE(jax_report.ok) << "jax: " << describe(c) << ": " << jax_report.failure;
    }
}

// ---- edge cases -----------------------------------------------------------------------

TEST(ScanLengths, AllFullLengthIsTheScanWithoutLengths) {
  const Inputs in = random_inputs(10);
  Tape tape;
  const Vars v = variables(tape, in);
  const std::vector<std::int64_t> full(kBatch, kSteps);
  for (bool reverse : {false, true}) {
    const ScanResult with = theano_run(v, {reverse, -1, Keep::all, {}}, full);
    const ScanResult without = theano_run(v, {reverse, -1, Keep::all, {}}, {});
    EXPECT_EQ(max_abs_diff(with[0].value(), without[0].value()), 0.0);
    EXPECT_EQ(max_abs_diff(with[1].value(), without[1].value()), 0.0);
  }
}

TEST(ScanLengths, AllZeroLengthsKeepTheInitialCarryAndGiveZeros) {
  const Inputs in = random_inputs(11);
  Tape tape;
  const Vars v = variables(tape, in);
  const JaxOut r = jax_run(v, {}, std::vector<std::int64_t>(kBatch, 0));
  EXPECT_EQ(max_abs_diff(std::get<0>(r.carry).value(), index(in.h0, 0, 0)), 0.0);
  EXPECT_EQ(max_abs_diff(std::get<1>(r.carry).value(), index(in.h0, 0, 1)), 0.0);
  EXPECT_EQ(max_abs_diff(r.ys.first.value(), zeros_like(r.ys.first.value())), 0.0);
  // The carry's gradient passes straight through; the weights get none.
  const std::vector<Var> g = grad(std::vector<Var>{sum(std::get<0>(r.carry)) + sum(r.ys.first)}, std::vector<Var>{v.h0, v.w});
  EXPECT_EQ(max_abs_diff(index(g[0].value(), 0, 0), ones({kBatch, kHidden}, f64)), 0.0);
  EXPECT_EQ(max_abs_diff(g[1].value(), zeros_like(g[1].value())), 0.0);
}

TEST(ScanLengths, TensorLengthsAndRunsWithoutGradients) {
  const Inputs in = random_inputs(12);
  Tape tape;
  const Vars v = variables(tape, in);
  const ScanResult from_vector = theano_run(v, {}, kLengths);
  const ScanResult from_tensor = theano_run(v, {}, tensor({5, 2, 0, 3}, DType::int64));
  EXPECT_EQ(max_abs_diff(from_vector[0].value(), from_tensor[0].value()), 0.0);
  NoGrad off;  // the engine's compact path keeps the masked carry too
  const ScanResult plain = theano_run(v, {}, kLengths);
  EXPECT_EQ(max_abs_diff(from_vector[0].value(), plain[0].value()), 0.0);
  EXPECT_EQ(max_abs_diff(from_vector[1].value(), plain[1].value()), 0.0);
}

TEST(ScanLengths, ZeroStepsWithZeroLengths) {
  Tape tape;
  Var xs = tape.variable(zeros({0, 2, 3}, f64));
  Var h = tape.variable(ones({2, 3}, f64));
  auto [carry, ys] = jax::scan([](const Var& c, const Var& x) { return std::pair{c + x, c * x}; }, h, xs,
                               {.lengths = {0, 0}});
  EXPECT_EQ(max_abs_diff(carry.value(), ones({2, 3}, f64)), 0.0);
  EXPECT_EQ(ys.shape(), (Shape{0, 2, 3}));
}

// ---- bad lengths ---------------------------------------------------------------------

TEST(ScanLengths, BadLengthsFailCleanly) {
  const Inputs in = random_inputs(13);
  Tape tape;
  const Vars v = variables(tape, in);
  Shared counter(scalar(0.0, f64), "counter");
  auto step_with_update = [&](std::span<const Var> a) {
    StepResult r = theano_step(a);
    r.updates.set(counter, tape.read(counter) + 1.0);
    return r;
  };
  auto run = [&](SequenceLengths lengths) {
    scan(step_with_update, {.sequences = {Sequence(v.x, {-1, 0})},
                            .outputs_info = {OutputInfo(v.h0, {-2, -1}), OutputInfo()},
                            .non_sequences = {v.w, v.u},
                            .lengths = std::move(lengths)});
  };
  expect_clean_failure<ShapeError>(tape, [&] { run(std::vector<std::int64_t>{1, 2, 3}); },
                                   {"scan", "lengths has shape [3]", "sequence 0 of shape [6, 4, 3]", "axis 1"});
  expect_clean_failure<ValueError>(tape, [&] { run(std::vector<std::int64_t>{1, 6, 0, 0}); },
                                   {"scan", "lengths[1] = 6", "[0, 5]"});
  expect_clean_failure<ValueError>(tape, [&] { run(std::vector<std::int64_t>{1, -1, 0, 0}); },
                                   {"scan", "lengths[1] = -1"});
  expect_clean_failure<ValueError>(tape, [&] { run(tensor({1.0, 2.5, 0.0, 0.0}, f64)); },
                                   {"scan", "lengths of shape [4]", "2.5", "whole numbers"});
  expect_clean_failure<ShapeError>(tape, [&] { run(tensor({{1.0, 2.0}, {0.0, 0.0}}, f64)); },
                                   {"scan", "lengths has shape [2, 2]", "1-D"});
  EXPECT_EQ(counter.value().item(), 0.0);

  // A step output without the batch axis, on JAX's face: named by its path.
  auto no_batch = [](const Var& c, const Var& x) { return std::pair{c + x, sum(x)}; };
  Var xs = tape.variable(zeros({3, 2, 1}, f64)), h = tape.variable(zeros({2, 1}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { jax::scan(no_batch, h, xs, {.lengths = {1, 2}}); },
                                   {"jax::scan", "lengths has shape [2]", "ys", "shape []", "no axis 0"});
  // The carry's batch axis.
  Var wide = tape.variable(zeros({3, 1}, f64));
  expect_clean_failure<ShapeError>(tape, [&] { jax::scan(no_batch, wide, xs, {.lengths = {1, 2}}); },
                                   {"jax::scan", "the initial state of carry", "[3, 1]", "size 3 on axis 0"});
}

}  // namespace
}  // namespace recur
