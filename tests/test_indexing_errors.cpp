// slice, index, take, gather, concat, stack and split: values on small known cases, and
// bad arguments throwing the documented exception with the op's name and the offending
// shape, without recording anything on the tape.
#include <gtest/gtest.h>

#include <functional>
#include <string>

#include <recur/autodiff/tape_access.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;


Tensor iota(const Shape& shape, DType dtype = DType::float32) { return arange(0, double(numel(shape)), 1, dtype).view(shape); }
Tensor ids(std::vector<std::int64_t> v, Shape shape) { return from_vector(v, shape); }
using testing::values;
using Doubles = std::vector<double>;

// ---- values -------------------------------------------------------------------------

TEST(Indexing, SliceOfRowsIsAViewAndItsGradientIsNotShared) {
  const Tensor x = iota({4, 3});
  const Tensor rows = slice(x, 0, 1, 3);  // rows 1 and 2: no copy
  EXPECT_EQ(rows.storage(), x.storage());
  EXPECT_EQ(values(rows), (Doubles{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(slice(x, 0, 3, 1).shape(), (Shape{0, 3}));  // empty, like NumPy
  EXPECT_NE(slice(x, 0, 0, 4, 2).storage(), x.storage());  // a step copies
  EXPECT_THROW(x.rows(2, 5), IndexError);
  // Tensor's own views count their elements from the shape they keep.
  const Tensor r = x.rows(1, 3), row = x[-1], flat = x.view({12}), none = x.rows(2, 2);
  EXPECT_EQ(r.numel(), 6);
  EXPECT_EQ(values(r), (Doubles{3, 4, 5, 6, 7, 8}));
  EXPECT_EQ(row.shape(), (Shape{3}));
  EXPECT_EQ(row.numel(), 3);
  EXPECT_EQ(values(row), (Doubles{9, 10, 11}));
  EXPECT_EQ(flat.numel(), 12);
  EXPECT_EQ(none.shape(), (Shape{0, 3}));
  EXPECT_EQ(none.numel(), 0);
  EXPECT_EQ(iota({2, 0, 3})[1].numel(), 0);
  EXPECT_EQ(x.size(0), 4);
  EXPECT_EQ(x.size(-1), 3);
  EXPECT_EQ(x.size(-2), 4);
  expect_error<AxisError>([&] { (void)x.size(2); }, {"size", "2", "[4, 3]"});
  expect_error<AxisError>([&] { (void)x.size(-3); }, {"size", "-3", "[4, 3]"});
  // Two views of one value, each used twice: their gradients add up without touching the value.
  Tape tape;
  const Var v = tape.variable(iota({4, 3}, DType::float64));
  const Var a = slice(v, 0, 0, 2), b = slice(v, 0, 1, 4);
  tape.backward(sum(a * 2.0) + sum(b) + sum(a));
  EXPECT_EQ(values(v.grad()), (Doubles{3, 3, 3, 4, 4, 4, 1, 1, 1, 1, 1, 1}));
  EXPECT_EQ(values(v.value()), values(iota({4, 3}, DType::float64)));
}

TEST(Indexing, SliceFollowsNumPy) {
  const Tensor x = iota({2, 5});  // [[0..4], [5..9]]
  EXPECT_EQ(values(slice(x, 1, 1, 4)), (Doubles{1, 2, 3, 6, 7, 8}));
  EXPECT_EQ(values(slice(x, -1, -2, 100)), (Doubles{3, 4, 8, 9}));       // negative start, stop clamped
  EXPECT_EQ(values(slice(x, 1, -100, 5, 2)), (Doubles{0, 2, 4, 5, 7, 9}));  // start clamped, step 2
  EXPECT_EQ(slice(x, 1, 4, 1).shape(), (Shape{2, 0}));                    // empty, not an error
  EXPECT_EQ(values(slice(x, 0, 1, 2)), (Doubles{5, 6, 7, 8, 9}));
  EXPECT_EQ(values(slice(iota({6}, DType::int64), 0, 1, 6, 3)), (Doubles{1, 4}));  // any dtype
}

TEST(Indexing, IndexRemovesTheAxisAndAlongAxis0IsAView) {
  const Tensor x = iota({3, 2, 2});
  const Tensor row = index(x, 0, -1);
  EXPECT_EQ(row.shape(), (Shape{2, 2}));
  EXPECT_EQ(values(row), (Doubles{8, 9, 10, 11}));
  EXPECT_EQ(row.storage(), x.storage());  // x[t]: no copy
  EXPECT_EQ(values(index(x, 1, 1)), (Doubles{2, 3, 6, 7, 10, 11}));
  EXPECT_EQ(values(index(x, -1, 0)), (Doubles{0, 2, 4, 6, 8, 10}));
  const Tensor lead = iota({1, 3, 2});
  EXPECT_EQ(index(lead, 1, 1).storage(), lead.storage());  // size-1 leading axes: still a view
  EXPECT_EQ(index(iota({4}), 0, 2).item(), 2.0);
}

TEST(Indexing, TakeShapesAndValues) {
  const Tensor w = iota({4, 2});
  const Tensor e = take(w, ids({3, 0, -1, 3}, {2, 2}));  // embedding lookup
  EXPECT_EQ(e.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(e), (Doubles{6, 7, 0, 1, 6, 7, 6, 7}));
  const Tensor x = iota({2, 3, 2});
  const Tensor t = take(x, ids({2, 0}, {2}), 1);
  EXPECT_EQ(t.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(t), (Doubles{4, 5, 0, 1, 10, 11, 6, 7}));
  EXPECT_EQ(take(x, ids({1}, {}), -1).shape(), (Shape{2, 3}));  // 0-d indices drop the axis
}

TEST(Indexing, TakeGradientAddsUpRepeats) {
  Tape tape;
  Var w = tape.variable(iota({3, 2}, DType::float64));
  tape.backward(sum(take(w, ids({2, 0, 2, 2}, {4}))));
  EXPECT_EQ(values(w.grad()), (Doubles{1, 1, 0, 0, 3, 3}));
}

TEST(Indexing, GatherPicksAlongTheAxis) {
  const Tensor x = iota({2, 3});  // [[0, 1, 2], [3, 4, 5]]
  EXPECT_EQ(values(gather(x, 1, ids({2, 0, -1, 1}, {2, 2}))), (Doubles{2, 0, 5, 4}));
  EXPECT_EQ(values(gather(x, 0, ids({1, 0}, {1, 2}))), (Doubles{3, 1}));
  Tape tape;
  Var v = tape.variable(iota({2, 3}, DType::float64));
  tape.backward(sum(gather(v, 1, ids({0, 0, 2, 1}, {2, 2}))));
  EXPECT_EQ(values(v.grad()), (Doubles{2, 0, 0, 0, 1, 1}));
}

TEST(Joining, ConcatStackSplit) {
  const Tensor a = iota({2, 2}), b = iota({2, 1}) + 10.0;
  EXPECT_EQ(values(concat({a, b}, 1)), (Doubles{0, 1, 10, 2, 3, 11}));
  EXPECT_EQ(values(concat(std::vector<Tensor>{a, a}, -2)), (Doubles{0, 1, 2, 3, 0, 1, 2, 3}));
  const Tensor s = stack({a, a + 4.0}, -1);
  EXPECT_EQ(s.shape(), (Shape{2, 2, 2}));
  EXPECT_EQ(values(s), (Doubles{0, 4, 1, 5, 2, 6, 3, 7}));
  EXPECT_EQ(stack({a, a}, 2).shape(), (Shape{2, 2, 2}));
  const auto parts = split(iota({2, 5}), 1, {2, 0, 3});
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(values(parts[0]), (Doubles{0, 1, 5, 6}));
  EXPECT_EQ(parts[1].shape(), (Shape{2, 0}));
  EXPECT_EQ(values(parts[2]), (Doubles{2, 3, 4, 7, 8, 9}));
  EXPECT_EQ(split(iota({6}), 0, {6}).size(), 1u);  // a one-element list is sizes, not n_equal
  EXPECT_EQ(split(iota({6}), 0, 3).size(), 3u);
  EXPECT_EQ(split(iota({6}), 0, std::vector<std::int64_t>{1, 5})[1].shape(), (Shape{5}));
}

TEST(Joining, VarFormsAcceptVectorsAndLists) {
  Tape tape;
  Var a = tape.variable(ones({2, 3}, DType::float64)), b = tape.variable(ones({1, 3}, DType::float64));
  std::vector<Var> list{a, b, a};
  EXPECT_EQ(concat(list).shape(), (Shape{5, 3}));
  EXPECT_EQ(concat({a, b}, -2).shape(), (Shape{3, 3}));
  EXPECT_EQ(stack({a, a}, 1).shape(), (Shape{2, 2, 3}));
  const auto pieces = split(concat(list), 0, {1, 4});
  tape.backward(sum(pieces[1] * 2.0));
  EXPECT_EQ(values(a.grad()), (Doubles{2, 2, 2, 4, 4, 4}));  // rows 1 (first a) and 3..4 (second a)
  EXPECT_EQ(values(b.grad()), (Doubles{2, 2, 2}));
}

// A recorded concat of pieces that lie one after the other in one buffer (rows a loop wrote
// into its stacked result) is a view of that buffer: tape values are never written. Pieces
// out of order, or side by side on an inner axis, are copied; so is every Tensor concat,
// whose caller may write to the result. Gradients are the same either way.
TEST(Joining, RecordedConcatOfAdjacentRowsIsAView) {
  Tape tape;
  const Var all = tape.variable(iota({4, 3}, DType::float64));
  const std::vector<Var> rows{index(all, 0, 0), slice(all, 0, 1, 3), index(all, 0, 3)};
  std::vector<Var> parts;
  for (const Var& r : rows) parts.push_back(r.rank() == 1 ? unsqueeze(r, 0) : r);
  const Var joined = concat(parts);
  EXPECT_EQ(values(joined), values(all));
  for (const Var& p : parts) ASSERT_EQ(p.value().storage(), all.value().storage());  // rows along axis 0 are views
  EXPECT_EQ(joined.value().storage(), all.value().storage());
  EXPECT_EQ(joined.value().raw_data(), all.value().raw_data());
  const Var reordered = concat({parts[2], parts[0]});
  EXPECT_NE(reordered.value().storage(), parts[0].value().storage());
  EXPECT_EQ(values(reordered), (Doubles{9, 10, 11, 0, 1, 2}));
  const Var columns = concat({slice(joined, 1, 0, 1), slice(joined, 1, 1, 3)}, 1);  // not one block per piece
  EXPECT_EQ(values(columns), values(all));
  const std::vector<Tensor> tensors{parts[0].value(), parts[1].value(), parts[2].value()};
  EXPECT_NE(concat(std::span<const Tensor>(tensors)).storage(), parts[0].value().storage());
  tape.backward(sum(joined * joined) + sum(reordered) + sum(columns));
  EXPECT_EQ(values(all.grad()), (Doubles{2, 4, 6, 7, 9, 11, 13, 15, 17, 20, 22, 24}));  // 2x + 1, + 1 on rows 0, 3
}

// A recorded stack of adjacent rows is a view too; concat's and stack's rules read only
// shapes, so their inputs' values may be dropped (a captured loop drops what no rule reads)
// and backward still gives every input its part of the gradient.
TEST(Joining, StackOfAdjacentRowsIsAViewAndItsRuleReadsOnlyShapes) {
  Tape tape;
  const Var all = tape.variable(iota({3, 2}, DType::float64));
  const std::vector<Var> rows{index(all, 0, 0), index(all, 0, 1), index(all, 0, 2)};
  const Var stacked = stack(rows, 0), swapped = stack({rows[1], rows[0]}, -1), joined = concat({rows[2], rows[0]});
  EXPECT_EQ(stacked.value().raw_data(), all.value().raw_data());
  EXPECT_EQ(values(swapped), (Doubles{2, 0, 3, 1}));
  for (const Var& v : {stacked, swapped, joined})
    for (const std::size_t k : {std::size_t{0}, std::size_t{1}, detail::kBackwardOutput})
      EXPECT_FALSE(TapeAccess::node(tape, v.id()).op.backward_reads(k)) << tape.describe(v)->op << " input " << k;
  for (const Var& r : rows) TapeAccess::drop_unread_value(tape, r.id());
  tape.backward(sum(stacked * Var(iota({3, 2}, DType::float64))) + sum(swapped) + 2.0 * sum(joined));
  EXPECT_EQ(values(all.grad()), (Doubles{0 + 1 + 2, 1 + 1 + 2, 2 + 1, 3 + 1, 4 + 2, 5 + 2}));
}

// ---- errors -------------------------------------------------------------------------

TEST(IndexingErrors, Slice) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}));
  expect_clean_failure<ValueError>(tape, [&] { slice(x, 1, 0, 3, 0); }, {"recur::slice", "step", "[2, 3]"});
  expect_clean_failure<ValueError>(tape, [&] { slice(x, 1, 0, 3, -1); }, {"recur::slice", "-1", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { slice(x, 2, 0, 1); }, {"recur::slice", "axis", "[2, 3]"});
  EXPECT_THROW(slice(ones({2, 3}), -3, 0, 1), AxisError);
}

TEST(IndexingErrors, Index) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}));
  expect_clean_failure<IndexError>(tape, [&] { index(x, 1, 3); }, {"recur::index", "3", "[2, 3]"});
  expect_clean_failure<IndexError>(tape, [&] { index(x, 0, -3); }, {"recur::index", "-3", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { index(x, -3, 0); }, {"recur::index", "-3", "[2, 3]"});
  Var s = tape.variable(scalar(1.0));
  expect_clean_failure<AxisError>(tape, [&] { index(s, 0, 0); }, {"recur::index", "[]"});
}

TEST(IndexingErrors, Take) {
  Tape tape;
  Var w = tape.variable(ones({4, 3}));
  expect_clean_failure<IndexError>(tape, [&] { take(w, ids({1, 4}, {2})); }, {"recur::take", "index 4", "[4, 3]"});
  expect_clean_failure<IndexError>(tape, [&] { take(w, ids({-4, -5}, {2})); }, {"recur::take", "-5", "[4, 3]"});
  expect_clean_failure<IndexError>(tape, [&] { take(w, ids({3}, {1}), 1); }, {"recur::take", "3", "[4, 3]"});
  expect_clean_failure<DTypeError>(tape, [&] { take(w, ones({2})); }, {"recur::take", "int64", "float32", "[2]"});
  expect_clean_failure<AxisError>(tape, [&] { take(w, ids({0}, {1}), 2); }, {"recur::take", "[4, 3]"});
  Var i = tape.constant(ids({7}, {1}));
  expect_clean_failure<IndexError>(tape, [&] { take(w, i); }, {"recur::take", "7", "[4, 3]"});
}

TEST(IndexingErrors, Gather) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}));
  expect_clean_failure<IndexError>(tape, [&] { gather(x, 1, ids({0, 3}, {1, 2})); }, {"recur::gather", "3", "[2, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { gather(x, 1, ids({0, 1}, {2})); },
                                   {"recur::gather", "[2]", "[2, 3]"});  // rank differs
  expect_clean_failure<ShapeError>(tape, [&] { gather(x, 1, ids({0, 0, 0}, {3, 1})); },
                                   {"recur::gather", "[3, 1]", "[2, 3]"});  // larger on axis 0
  expect_clean_failure<DTypeError>(tape, [&] { gather(x, 0, ones({1, 3})); }, {"recur::gather", "int64", "[1, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { gather(x, 2, ids({0}, {1, 1})); }, {"recur::gather", "[2, 3]"});
}

TEST(JoiningErrors, Concat) {
  Tape tape;
  Var a = tape.variable(ones({2, 3})), b = tape.variable(ones({2, 4})), c = tape.variable(ones({2, 3}, DType::float64));
  Var d = tape.variable(ones({3}));
  expect_clean_failure<ShapeError>(tape, [&] { concat({a, b}, 0); }, {"recur::concat", "input 1", "[2, 4]", "[2, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { concat({a, a, d}, 0); },
                                   {"recur::concat", "input 2", "[3]", "[2, 3]"});
  expect_clean_failure<DTypeError>(tape, [&] { concat({a, c}, 0); }, {"recur::concat", "input 1", "float64", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { concat({a, a}, 2); }, {"recur::concat", "[2, 3]"});
  expect_clean_failure<ValueError>(tape, [&] { concat(std::vector<Var>{}, 0); }, {"recur::concat", "empty"});
  EXPECT_THROW(concat(std::vector<Tensor>{}, 0), ValueError);
  EXPECT_NO_THROW(concat({a, b}, 1));
}

TEST(JoiningErrors, Stack) {
  Tape tape;
  Var a = tape.variable(ones({2, 3})), b = tape.variable(ones({2, 4})), c = tape.variable(ones({2, 3}, DType::float64));
  expect_clean_failure<ShapeError>(tape, [&] { stack({a, a, b}, 0); }, {"recur::stack", "input 2", "[2, 4]", "[2, 3]"});
  expect_clean_failure<DTypeError>(tape, [&] { stack({a, c}, 0); }, {"recur::stack", "float64", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { stack({a, a}, 3); }, {"recur::stack", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { stack({a, a}, -4); }, {"recur::stack", "[2, 3]"});
  expect_clean_failure<ValueError>(tape, [&] { stack(std::vector<Var>{}, 0); }, {"recur::stack", "empty"});
  EXPECT_EQ(stack({a, a}, -3).shape(), (Shape{2, 2, 3}));
}

TEST(JoiningErrors, Split) {
  Tape tape;
  Var x = tape.variable(ones({2, 5}));
  expect_clean_failure<ShapeError>(tape, [&] { split(x, 1, {2, 2}); }, {"recur::split", "4", "[2, 5]"});
  expect_clean_failure<ValueError>(tape, [&] { split(x, 1, {6, -1}); }, {"recur::split", "-1", "[2, 5]"});
  expect_clean_failure<ValueError>(tape, [&] { split(x, 1, 2); }, {"recur::split", "n_equal", "[2, 5]"});
  expect_clean_failure<ValueError>(tape, [&] { split(x, 1, 0); }, {"recur::split", "n_equal", "[2, 5]"});
  expect_clean_failure<AxisError>(tape, [&] { split(x, 2, 1); }, {"recur::split", "[2, 5]"});
}

// The Tensor-index forms add a constant only when the op succeeds.
TEST(IndexingErrors, TensorIndicesOnAVarLeaveTheTapeAlone) {
  Tape tape;
  Var x = tape.variable(ones({2, 3}));
  expect_clean_failure<IndexError>(tape, [&] { gather(x, 0, ids({5, 0, 0}, {1, 3})); }, {"recur::gather", "5"});
  const auto before = tape.size();
  take(x, ids({1}, {1}));
  EXPECT_EQ(tape.size(), before + 2);  // the indices constant and the take
}

}  // namespace
}  // namespace recur
