// The tape: accumulation, deep graphs, higher-order gradients, detach, no_grad.
#include <gtest/gtest.h>

#include <cmath>

#include <recur/recur.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/core/elementwise.hpp>

#include "values.hpp"

namespace recur {
namespace {

TEST(Tape, SameVarOnBothSidesAccumulates) {
  Tape tape;
  Var a = tape.variable(tensor({1.0, -2.0}, DType::float64));
  tape.backward(sum(a + a));
  EXPECT_TRUE(allclose(a.grad(), tensor({2.0, 2.0}, DType::float64)));
}

// A gradient given away takes the sum in its own buffer when the running sum's is held
// elsewhere (a view of an output's gradient), and leaves that buffer alone; the sum is acc + g
// as a fresh one would be. Where neither buffer is free, a fresh sum; where acc's is, acc's.
TEST(Tape, AccumulatingAGivenGradientReusesItsBufferAndLeavesASharedOneAlone) {
  const Tensor whole = tensor({{1.0, 2.0}, {3.0, 4.0}}, DType::float64);
  Tensor acc = whole[1];  // shares whole's buffer
  Tensor g = tensor({0.5, -8.0}, DType::float64);
  const void* g_buffer = g.raw_data();
  accumulate_into(acc, std::move(g));
  EXPECT_EQ(acc.raw_data(), g_buffer);
  EXPECT_EQ(acc.data<double>()[0], 3.5);
  EXPECT_EQ(acc.data<double>()[1], -4.0);
  EXPECT_EQ(whole.data<double>()[2], 3.0);  // the shared row untouched
  EXPECT_EQ(whole.data<double>()[3], 4.0);

  Tensor held = tensor({1.0, 1.0}, DType::float64);
  const Tensor other_holder = held;
  Tensor shared_acc = whole[0];
  accumulate_into(shared_acc, Tensor(held));  // g's buffer held twice too: a fresh sum
  EXPECT_NE(shared_acc.raw_data(), held.raw_data());
  EXPECT_NE(shared_acc.raw_data(), whole.raw_data());
  EXPECT_EQ(shared_acc.data<double>()[0], 2.0);
  EXPECT_EQ(held.data<double>()[0], 1.0);

  Tensor own = tensor({1.0, 2.0}, DType::float64);
  const void* own_buffer = own.raw_data();
  accumulate_into(own, tensor({10.0, 20.0}, DType::float64));  // acc's own buffer takes it
  EXPECT_EQ(own.raw_data(), own_buffer);
  EXPECT_EQ(own.data<double>()[1], 22.0);

  Tensor wide = whole[0];
  EXPECT_THROW(accumulate_into(wide, tensor({1.0f, 2.0f}, DType::float32)), DTypeError);
}

TEST(Tape, SharedOnTwoBranchesAndTwoTapesAccumulates) {
  Shared w(tensor({3.0}, DType::float64), "w");
  {
    Tape tape;
    Var x = tape.constant(tensor({2.0}, DType::float64));
    tape.backward(sum(Var(w) * x + Var(w) * Var(w)));  // d/dw = x + 2w = 8
  }
  EXPECT_DOUBLE_EQ(w.grad().item(), 8.0);
  {
    Tape tape;
    tape.backward(sum(Var(w) * 5.0));  // + 5
  }
  EXPECT_DOUBLE_EQ(w.grad().item(), 13.0);
  w.zero_grad();
  EXPECT_FALSE(w.has_grad());
  EXPECT_DOUBLE_EQ(w.grad().item(), 0.0);
}

TEST(Tape, ReadingASharedTwiceGivesOneNode) {
  Shared w(ones({2}), "w");
  Tape tape;
  Var a = w, b = w;
  EXPECT_TRUE(same_node(a, b));
}

TEST(Tape, MillionNodeChainBackwardAndDestruction) {
  constexpr int kNodes = 1'000'000;
  Shared w(tensor({1.0}, DType::float64), "w");
  {
    Tape tape;
    Var y = w;
    Var c = tape.constant(tensor({1e-6}, DType::float64));
    for (int i = 0; i < kNodes; ++i) y = y + c;  // y = w + 1
    EXPECT_GE(tape.size(), static_cast<std::uint32_t>(kNodes));
    tape.backward(sum(y * y));  // d/dw (w + 1)^2 = 2 (w + 1) = 4
  }
  EXPECT_NEAR(w.grad().item(), 4.0, 1e-9);
}

TEST(Tape, HessianVectorProduct) {
  // f(x) = sum(x^3): grad = 3x^2, Hessian diag 6x; H v = 6 x v.
  Tape tape;
  Var x = tape.variable(tensor({1.0, -2.0, 0.5}, DType::float64));
  Var f = sum(x * x * x);
  Var g = grad(f, x, {.create_graph = true});
  EXPECT_TRUE(allclose(g.value(), tensor({3.0, 12.0, 0.75}, DType::float64)));
  const Tensor v = tensor({1.0, 1.0, 2.0}, DType::float64);
  Var hv = grad(sum(g * tape.constant(v)), x);
  EXPECT_TRUE(allclose(hv.value(), tensor({6.0, -12.0, 6.0}, DType::float64)));
}

TEST(Tape, GradWithoutCreateGraphRecordsNoBackwardOps) {
  Tape tape;
  Var x = tape.variable(tensor({1.0, 2.0}, DType::float64));
  Var y = sum(tanh(x) * x);
  const auto before = tape.size();
  Var g = grad(y, x);
  EXPECT_EQ(tape.size(), before + 1);  // only the constant holding the result
  EXPECT_FALSE(g.requires_grad());
}

TEST(Tape, ThirdOrder) {
  // f = x^4: f' = 4x^3, f'' = 12x^2, f''' = 24x
  Tape tape;
  Var x = tape.variable(tensor({1.5}, DType::float64));
  Var f = sum(pow(x, 4.0));
  Var d1 = grad(f, x, {.create_graph = true});
  Var d2 = grad(sum(d1), x, {.create_graph = true});
  Var d3 = grad(sum(d2), x);
  EXPECT_NEAR(d1.value().item(), 4 * 1.5 * 1.5 * 1.5, 1e-9);
  EXPECT_NEAR(d2.value().item(), 12 * 1.5 * 1.5, 1e-9);
  EXPECT_NEAR(d3.value().item(), 24 * 1.5, 1e-9);
}

TEST(Tape, DetachStopsTheGradient) {
  Tape tape;
  Var x = tape.variable(tensor({2.0}, DType::float64));
  Var y = x * detach(x);  // d/dx = detach(x) = 2, not 2x = 4
  tape.backward(sum(y));
  EXPECT_DOUBLE_EQ(x.grad().item(), 2.0);
}

TEST(Tape, NoGradRecordsValuesOnly) {
  Tape tape;
  Var x = tape.variable(tensor({2.0}, DType::float64));
  Var y;
  {
    NoGrad off;
    EXPECT_FALSE(grad_enabled());
    y = x * x;
    {
      EnableGrad on;
      EXPECT_TRUE(grad_enabled());
    }
  }
  EXPECT_TRUE(grad_enabled());
  EXPECT_DOUBLE_EQ(y.value().item(), 4.0);
  EXPECT_FALSE(y.requires_grad());
  EXPECT_THROW(tape.backward(sum(y)), GradientError);
}

TEST(Tape, GradOfUnusedInputIsZero) {
  Tape tape;
  Var x = tape.variable(tensor({1.0}, DType::float64));
  Var z = tape.variable(tensor({1.0, 2.0}, DType::float64));
  Var y = sum(x * 3.0);
  std::vector<Var> outs{y}, ins{x, z};
  auto g = grad(outs, ins);
  EXPECT_DOUBLE_EQ(g[0].value().item(), 3.0);
  EXPECT_TRUE(allclose(g[1].value(), zeros({2}, DType::float64)));
}

TEST(Tape, GradOfIntermediateNode) {
  Tape tape;
  Var x = tape.variable(tensor({3.0}, DType::float64));
  Var h = x * x;
  Var y = sum(h * h);  // dy/dh = 2h = 18
  EXPECT_DOUBLE_EQ(grad(y, h).value().item(), 18.0);
}

TEST(Tape, BackwardWithGradOutput) {
  Tape tape;
  Var x = tape.variable(tensor({1.0, 2.0}, DType::float64));
  tape.backward(x * x, tensor({1.0, 10.0}, DType::float64));
  EXPECT_TRUE(allclose(x.grad(), tensor({2.0, 40.0}, DType::float64)));
}

TEST(Tape, BytesHeldCountsEachBufferOnce) {
  Tape tape;
  Var x = tape.variable(zeros({256}));      // 1 KiB
  Var r = reshape(x, {16, 16});             // a view: no new buffer
  (void)r;
  EXPECT_EQ(tape.bytes_held(), 1024u);
  Var y = x * 2.0;  // 4 B scalar + 1 KiB result
  (void)y;
  EXPECT_EQ(tape.bytes_held(), 2 * 1024u + 4u);
}

TEST(Tape, CurrentTapeIsTheInnermost) {
  EXPECT_THROW(Tape::current(), TapeError);
  Tape outer;
  EXPECT_EQ(&Tape::current(), &outer);
  {
    Tape inner;
    EXPECT_EQ(&Tape::current(), &inner);
  }
  EXPECT_EQ(&Tape::current(), &outer);
}

TEST(Tape, ASharedReadUnderNoGradIsReadAgainWhenAGradientIsWanted) {
  Shared w(tensor({3.0}, DType::float64), "w");
  Tape tape;
  {
    NoGrad off;
    EXPECT_FALSE(Var(w).requires_grad());
  }
  Var again(w);
  EXPECT_TRUE(again.requires_grad());
  tape.backward(sum(again * again));
  EXPECT_DOUBLE_EQ(w.grad().item(), 6.0);
}

TEST(Tape, ASharedChangedSinceItsReadIsReadAgain) {
  Shared w(tensor({3.0}, DType::float64), "w");
  Tape tape;
  Var before(w);
  w.assign(tensor({5.0}, DType::float64));
  Var after(w);
  EXPECT_NE(before.id(), after.id());
  EXPECT_DOUBLE_EQ(before.value().item(), 3.0);
  EXPECT_DOUBLE_EQ(after.value().item(), 5.0);
  tape.backward(sum(after * after));  // only the fresh read is on the gradient's path
  EXPECT_DOUBLE_EQ(w.grad().item(), 10.0);
}

TEST(Tape, UpdateInPlaceLeavesTheValueATapeReadAlone) {
  Shared w(tensor({1.0, 2.0}, DType::float64), "w");
  Tape tape;
  Var read(w);
  const auto version = w.version();
  w.update([](Tensor& v) { v.data<double>()[0] = 7.0; });
  EXPECT_EQ(w.version(), version + 1);
  EXPECT_EQ(to_vector<double>(read.value()), (std::vector<double>{1.0, 2.0}));
  EXPECT_EQ(to_vector<double>(w.value()), (std::vector<double>{7.0, 2.0}));
}

TEST(Tape, PowGradientInTheBaseIsZeroForAnExponentOfZero) {
  Tape tape;
  Var a = tape.variable(tensor({0.0, 3.0}, DType::float64));
  Var b = tape.constant(tensor({0.0, 0.0}, DType::float64));
  tape.backward(sum(pow(a, b)));
  EXPECT_EQ(to_vector<double>(a.grad()), (std::vector<double>{0.0, 0.0}));
}

TEST(Tape, PowGradientInTheExponentIsZeroAtABaseOfZero) {
  Tape tape;
  Var a = tape.variable(tensor({0.0, 2.0}, DType::float64));
  Var b = tape.variable(tensor({2.0, 3.0}, DType::float64));
  tape.backward(sum(pow(a, b)));
  EXPECT_EQ(to_vector<double>(b.grad())[0], 0.0);
  EXPECT_NEAR(to_vector<double>(b.grad())[1], 8.0 * std::log(2.0), 1e-12);
}

}  // namespace
// A Var of a node that was dropped (a failed op rolled back, a loop's trial calls) throws
// TapeError naming the drop, even where a later node took its place; Vars of the nodes that
// stayed, and Vars made since, keep working, and two handles of one node are the same node
// whenever they were made.
TEST(Tape, AVarOfADroppedNodeIsRefusedNotReadAsTheNodeInItsPlace) {
  Tape tape;
  const Var a = tape.variable(Tensor(from_vector<double>({1, 2}, {2})));
  const Var b = a * 2.0;  // node 1, dropped below
  const Var stale_chain = b + 1.0;
  TapeAccess::truncate(tape, 1);
  const Var c = a + 10.0;  // node 1 again
  ASSERT_EQ(c.id(), b.id());
  for (const Var* v : {&b, &stale_chain}) {
    try {
      (void)v->value();
      ADD_FAILURE() << "a dropped node's Var was read";
    } catch (const TapeError& e) {
      EXPECT_NE(std::string(e.what()).find("was dropped"), std::string::npos) << e.what();
    }
    EXPECT_THROW((void)(*v + 1.0), TapeError);
  }
  EXPECT_EQ(testing::values(c), (std::vector<double>{11, 12}));
  EXPECT_TRUE(same_node(a, TapeAccess::handle(tape, a.id())));
  tape.backward(sum(c * a));
  EXPECT_EQ(testing::values(a.grad()), (std::vector<double>{12, 14}));
  // A second drop below the first: Vars made between the two that it removes are refused too.
  const Var d = c * 3.0;
  TapeAccess::truncate(tape, 1);
  EXPECT_THROW((void)c.value(), TapeError);
  EXPECT_THROW((void)d.value(), TapeError);
  EXPECT_NO_THROW((void)a.value());
}

// A value a captured loop dropped because no backward rule reads it: reading it says why it
// is gone, and backward (which does not read it) runs.
TEST(Tape, ReadingAValueDroppedAsUnreadSaysWhy) {
  Tape tape;
  const Var a = tape.variable(Tensor(from_vector<double>({1, 2}, {2})));
  const Var b = a + 1.0;  // add's rule reads no value
  const Var c = b * 3.0;
  TapeAccess::drop_unread_value(tape, b.id());
  try {
    (void)b.value().data<double>();
    ADD_FAILURE() << "a dropped value was read";
  } catch (const TapeError& e) {
    EXPECT_NE(std::string(e.what()).find("dropped its value"), std::string::npos) << e.what();
  }
  tape.backward(sum(c));
  EXPECT_EQ(testing::values(a.grad()), (std::vector<double>{3, 3}));
}

}  // namespace recur
