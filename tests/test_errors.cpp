// Bad input throws the documented recur::Error subclass, names the op, the argument and
// the shapes, and leaves the tape (and shared variables) as they were.
#include <gtest/gtest.h>

#include <limits>

#include <functional>
#include <string>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;


TEST(Errors, ShapeMismatchInMatmul) {
  Tape tape;
  Var a = tape.variable(ones({2, 3})), b = tape.variable(ones({4, 5}));
  expect_clean_failure<ShapeError>(tape, [&] { matmul(a, b); }, {"recur::matmul", "'a'", "[2, 3]", "[4, 5]"});
}

TEST(Errors, BroadcastingThatCannotWork) {
  Tape tape;
  Var a = tape.variable(ones({2, 3})), b = tape.variable(ones({4, 3}));
  expect_clean_failure<ShapeError>(tape, [&] { a * b; }, {"recur::mul", "'a'", "'b'", "[2, 3]", "[4, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { broadcast_to(a, {3, 3}); }, {"broadcast_to", "[2, 3]", "[3, 3]"});
}

TEST(Errors, DTypeMismatch) {
  Tape tape;
  Var a = tape.variable(ones({2})), b = tape.variable(ones({2}, DType::float64));
  expect_clean_failure<DTypeError>(tape, [&] { a + b; }, {"recur::add", "float32", "float64", "[2]"});
}

TEST(Errors, AxisOutOfRange) {
  Tape tape;
  Var a = tape.variable(ones({2, 3}));
  expect_clean_failure<AxisError>(tape, [&] { sum(a, {2}); }, {"recur::sum", "axes", "2", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { transpose(a, 0, -3); }, {"recur::transpose", "-3", "[2, 3]"});
  expect_clean_failure<AxisError>(tape, [&] { unsqueeze(a, 4); }, {"recur::unsqueeze", "[2, 3]"});
}

TEST(Errors, Int64IntoADifferentiableOp) {
  Tape tape;
  Var i = tape.constant(arange(4));
  expect_clean_failure<DTypeError>(tape, [&] { tanh(i); }, {"recur::tanh", "int64"});
  EXPECT_THROW(tape.variable(arange(3)), DTypeError);
}

TEST(Errors, BackwardOfNonScalarWithoutGradOutput) {
  Tape tape;
  Var a = tape.variable(ones({2, 3}));
  Var y = a * a;
  expect_clean_failure<GradientError>(tape, [&] { tape.backward(y); }, {"recur::backward", "[2, 3]"});
  expect_clean_failure<GradientError>(tape, [&] { grad(y, a); }, {"recur::grad", "[2, 3]"});
  expect_clean_failure<ShapeError>(tape, [&] { tape.backward(y, ones({3})); }, {"grad_output", "[3]", "[2, 3]"});
}

TEST(Errors, VarOfADestroyedTape) {
  Var stale;
  {
    Tape tape;
    stale = tape.variable(ones({2}));
  }
  Tape other;
  try {
    (void)stale.value();
    ADD_FAILURE() << "no exception";
  } catch (const TapeError& e) {
    EXPECT_NE(std::string(e.what()).find("destroyed"), std::string::npos) << e.what();
  }
  expect_clean_failure<TapeError>(other, [&] { tanh(stale); }, {"destroyed"});
  EXPECT_THROW(Var().value(), TapeError);
}

TEST(Errors, MixingTwoTapesInOneOp) {
  Tape t1;
  Var a = t1.variable(ones({2}));
  Tape t2;
  Var b = t2.variable(ones({2}));
  expect_clean_failure<TapeError>(t1, [&] { a + b; }, {"recur::add", "another tape"});
  EXPECT_EQ(t2.size(), 1u);
}

TEST(Errors, SharedChangedBeforeBackward) {
  Shared w(ones({2}), "w");
  Shared u(ones({2}), "u");
  Tape tape;
  Var loss = sum(Var(w) * Var(u));
  w.assign(full({2}, 3.0));
  expect_clean_failure<VersionError>(tape, [&] { tape.backward(loss); }, {"recur::backward", "'w'", "[2]"});
  EXPECT_FALSE(w.has_grad());  // nothing accumulated anywhere
  EXPECT_FALSE(u.has_grad());
}

TEST(Errors, SharedAssignKeepsShapeAndDtype) {
  Shared w(ones({2, 2}), "w");
  EXPECT_THROW(w.assign(ones({4})), ShapeError);
  EXPECT_THROW(w.assign(ones({2, 2}, DType::float64)), DTypeError);
  EXPECT_EQ(w.version(), 0u);
}

TEST(Errors, MutableValueDoesNotDisturbATapeThatReadIt) {
  Shared w(ones({2}), "w");
  Tape tape;
  Var v = w;
  Tensor buf = w.mutable_value();
  buf.data<float>()[0] = 5.0f;
  EXPECT_FLOAT_EQ(v.value().at<float>({0}), 1.0f);  // the tape's copy is untouched
  EXPECT_FLOAT_EQ(w.value().at<float>({0}), 5.0f);
  EXPECT_EQ(w.version(), 1u);
}

}  // namespace
}  // namespace recur

namespace recur {
namespace {
TEST(Errors, CompositeOpsLeaveTheTapeUnchanged) {
  Tape tape;
  Var v = tape.variable(ones({3})), m = tape.variable(ones({2, 4}));
  Var i = tape.constant(arange(3));
  expect_clean_failure<ShapeError>(tape, [&] { matmul(v, m); }, {"recur::matmul", "[1, 3]", "[2, 4]"});
  expect_clean_failure<DTypeError>(tape, [&] { i * 2.0; }, {"recur::mul", "int64"});
  expect_clean_failure<DTypeError>(tape, [&] { mean(i); }, {"int64"});
}
TEST(Errors, SizesBeyondWhatMemoryCanAddress) {
  constexpr std::int64_t big = std::int64_t{1} << 40;
  EXPECT_THROW(Tensor::empty({big, big}), ShapeError);
  EXPECT_THROW(arange(0.0, std::numeric_limits<double>::infinity(), 1.0), ValueError);
  EXPECT_THROW(arange(0.0, 1e300, 1.0), ValueError);
  const Tensor x = arange(0.0, 5.0, 1.0, DType::float64);
  EXPECT_EQ(to_vector<double>(slice(x, 0, 1, 5, std::numeric_limits<std::int64_t>::max())),
            std::vector<double>{1.0});
  const std::int64_t huge[] = {std::numeric_limits<std::int64_t>::max(), std::numeric_limits<std::int64_t>::max()};
  EXPECT_THROW(split(x, 0, std::span<const std::int64_t>(huge)), ShapeError);
}

TEST(Errors, SharedAssignOfAnUndefinedValue) {
  Shared w(tensor({1.0}), "w");
  EXPECT_THROW(w.assign(Tensor()), ValueError);
  EXPECT_EQ(w.version(), 0u);
}

}  // namespace
}  // namespace recur
