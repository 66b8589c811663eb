// Gradients written by rows (GradSink::dense_rows, autodiff/propagate.cpp): a rule whose
// gradient is rows of its input's axis 0 (x[t], a window x[a:b]) gets a buffer that was not
// zeroed where no rule wrote those rows yet, and writes them. Whatever order the rules come in,
// whatever rows they leave out and whatever other gradients join, the result must be the
// gradient with zeros where nothing was added: checked against sums written out by hand, on
// buffers that show a row left unzeroed where the allocator hands back the garbage freed just
// before, and always under AddressSanitizer (which fills every new small buffer with 0xbe).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <vector>

#include <recur/recur.hpp>

#include "values.hpp"

namespace recur {
namespace {

constexpr DType f64 = DType::float64;

// x [5, 3] with x[i, j] = 10 i + j, as a variable of `tape`.
Var rows_variable(Tape& tape) {
  std::vector<double> v;
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 3; ++j) v.push_back(10.0 * i + j);
  return tape.variable(from_vector(v, {5, 3}));
}

// A buffer of the gradient's size full of garbage, freed: the pool hands the last block freed
// of a size back first, so the gradient that backward makes next is likely to get it.
void free_garbage() { Tensor garbage = full({5, 3}, 7.25e300, f64); }

// d/dx of loss, row by row (5 rows of 3): by backward, and by grad() (which keeps it).
std::vector<double> gradient_of(const std::function<Var(const Var&)>& loss_of) {
  std::vector<double> by_grad;
  {
    Tape tape;
    const Var x = rows_variable(tape);
    const Var loss = loss_of(x);
    free_garbage();
    by_grad = testing::values(grad(loss, x));
  }
  Tape tape;
  const Var x = rows_variable(tape);
  const Var loss = loss_of(x);
  free_garbage();
  tape.backward(loss);
  const std::vector<double> by_backward = testing::values(x.grad());
  EXPECT_EQ(by_grad, by_backward);
  return by_backward;
}

std::vector<double> per_row(std::initializer_list<double> scale) {  // scale[i] on every element of row i
  std::vector<double> g;
  for (double s : scale) g.insert(g.end(), {s, s, s});
  return g;
}

// Steps last first, as a loop's backward writes them; rows no step reads stay zero.
TEST(GradientRows, RowsWrittenLastFirstAndRowsLeftOutAreZero) {
  const auto g = gradient_of([](const Var& x) { return sum(index(x, 0, 1) * 2.0) + sum(index(x, 0, 3) * 3.0); });
  EXPECT_EQ(g, per_row({0, 2, 0, 3, 0}));
}

// Backward reaches the later rows first (the ops recorded last): rows 4 and 3 are written
// where they lie, and rows 0-2, which no rule wrote, must be zeroed when the gradient is read.
TEST(GradientRows, RowsNoRuleWroteAreZeroedWhenTheGradientIsRead) {
  EXPECT_EQ(gradient_of([](const Var& x) { return sum(index(x, 0, 4) * 2.0); }), per_row({0, 0, 0, 0, 2}));
  const auto g = gradient_of([](const Var& x) {
    const Var third = sum(index(x, 0, 3) * 3.0);
    const Var fourth = sum(index(x, 0, 4) * 2.0);  // recorded after: its rule runs first
    return third + fourth;
  });
  EXPECT_EQ(g, per_row({0, 0, 0, 3, 2}));
  // The first rows, then the last: the range shrinks from both ends; row 2 is left.
  const auto h = gradient_of([](const Var& x) {
    const Var last = sum(index(x, 0, 4) * 5.0);
    const Var first = sum(slice(x, 0, 0, 2) * 7.0);  // recorded after: its rule runs first
    return last + first;
  });
  EXPECT_EQ(h, per_row({7, 7, 0, 0, 5}));
}

// Rows in the order that ends in the middle of the unwritten ones (the rest is zeroed then).
TEST(GradientRows, RowsInAnyOrder) {
  const auto g = gradient_of([](const Var& x) {
    return sum(index(x, 0, 2) * 1.0) + sum(index(x, 0, 4) * 2.0) + sum(index(x, 0, 0) * 3.0) + sum(index(x, 0, 1) * 5.0);
  });
  EXPECT_EQ(g, per_row({3, 5, 1, 0, 2}));
}

// A row read twice adds both shares; a negative index is the row from the end.
TEST(GradientRows, ARowReadTwiceAddsAndNegativeIndicesWrap) {
  const auto g = gradient_of([](const Var& x) { return sum(index(x, 0, 3) * 2.0) + sum(index(x, 0, -2) * 5.0); });
  EXPECT_EQ(g, per_row({0, 0, 0, 7, 0}));
}

// Windows of rows (slice along axis 0) and single rows together.
TEST(GradientRows, WindowsAndRows) {
  const auto g = gradient_of([](const Var& x) {
    return sum(slice(x, 0, 3, 5) * 2.0) + sum(index(x, 0, 2) * 3.0) + sum(slice(x, 0, 0, 2) * 5.0) +
           sum(index(x, 0, 4) * 7.0);
  });
  EXPECT_EQ(g, per_row({5, 5, 3, 2, 9}));
}

// A gradient of the whole input (x * x) beside rows: its elements add to every row, written or not.
TEST(GradientRows, AWholeGradientJoinsTheRows) {
  const auto g = gradient_of([](const Var& x) { return sum(index(x, 0, 4) * 2.0) + sum(x * 3.0) + sum(index(x, 0, 1)); });
  EXPECT_EQ(g, per_row({3, 4, 3, 3, 5}));
}

// A loop over the rows (scan's sequence): every row written once, last first, with and without capture.
TEST(GradientRows, AScanOverTheRowsGivesEachRowItsGradient) {
  for (Capture capture : {Capture::off, Capture::required}) {
    Tape tape;
    const Var x = rows_variable(tape);
    const Var h0 = tape.constant(zeros({3}, f64));
    ScanResult r = scan([](std::span<const Var> a) -> StepResult { return {a[1] * 0.5 + a[0]}; },
                        {.sequences = {x}, .outputs_info = {h0}, .capture = capture});
    EXPECT_EQ(r.capture.captured, capture == Capture::required) << r.capture.reason;
    tape.backward(sum(r[0]));
    // h_t = sum_{s <= t} 0.5^(t - s) x_s, so dL/dx_s = sum_{t >= s} 0.5^(t - s) over t < 5.
    std::vector<double> want;
    for (int s = 0; s < 5; ++s) {
      double d = 0;
      for (int t = s; t < 5; ++t) d += std::pow(0.5, t - s);
      want.insert(want.end(), {d, d, d});
    }
    const std::vector<double> got = testing::values(x.grad());
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) EXPECT_DOUBLE_EQ(got[i], want[i]) << "element " << i;
  }
}

}  // namespace
}  // namespace recur
