// A backward consumes the graph it runs through: a second backward through the same ops
// throws (naming the op, saying how to keep the graph) and changes nothing, unless the
// earlier one passed retain_graph. Leaves are never consumed; grad() neither consumes nor
// minds a consumed graph; second order and checkpointed scans keep working.
#include <gtest/gtest.h>

#include <cstring>

#include <recur/autodiff/tape_access.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && a.dtype() == b.dtype() &&
         std::memcmp(a.clone().raw_data(), b.clone().raw_data(), a.nbytes()) == 0;
}

TEST(BackwardOnce, ASecondBackwardThrowsAndChangesNothing) {
  Shared w(tensor({3.0, -1.0}, f64), "w");
  Tape tape;
  const Var x = tape.variable(tensor({2.0, 5.0}, f64));
  const Var loss = sum(x * Var(w));
  tape.backward(loss);
  EXPECT_TRUE(same_bits(x.grad(), tensor({3.0, -1.0}, f64)));
  EXPECT_TRUE(same_bits(w.grad(), tensor({2.0, 5.0}, f64)));
  expect_clean_failure<GradientError>(tape, [&] { tape.backward(loss); },
                                      {"recur::backward", "'sum'", "earlier backward", "retain_graph"});
  expect_clean_failure<GradientError>(tape, [&] { backward(loss); }, {"recur::backward", "retain_graph"});
  expect_clean_failure<GradientError>(tape, [&] { tape.backward(loss, ones({}, f64)); }, {"recur::backward"});
  EXPECT_TRUE(same_bits(x.grad(), tensor({3.0, -1.0}, f64))) << "the refused backward added to x's gradient";
  EXPECT_TRUE(same_bits(w.grad(), tensor({2.0, 5.0}, f64))) << "the refused backward added to w's gradient";
}

TEST(BackwardOnce, RetainGraphAllowsAnotherBackwardWhichAddsAgain) {
  Tape tape;
  const Var x = tape.variable(tensor({1.5, -2.0}, f64));
  const Var loss = sum(x * x * x);  // d/dx = 3 x^2 = [6.75, 12]
  tape.backward(loss, {.retain_graph = true});
  tape.backward(loss, {.retain_graph = true});
  backward(loss);  // the last one need not keep the graph
  EXPECT_TRUE(same_bits(x.grad(), tensor({3 * 6.75, 3 * 12.0}, f64)));
  // That last one consumed it.
  expect_clean_failure<GradientError>(tape, [&] { tape.backward(loss); }, {"recur::backward", "'sum'"});
  EXPECT_TRUE(same_bits(x.grad(), tensor({3 * 6.75, 3 * 12.0}, f64)));
}

// The refused node is the first consumed one on the way down, wherever the new output is.
TEST(BackwardOnce, ANewLossThroughConsumedOpsThrowsNamingTheOp) {
  Tape tape;
  const Var x = tape.variable(tensor({2.0}, f64));
  const Var y = exp(x);
  tape.backward(sum(y));
  const Var again = sum(y * 2.0);
  expect_clean_failure<GradientError>(tape, [&] { tape.backward(again); }, {"'exp'", "retain_graph"});
  EXPECT_DOUBLE_EQ(x.grad().item(), std::exp(2.0));
}

// What is not the same graph: new ops after a backward, and leaves (variables, Shared reads)
// that two losses share.
TEST(BackwardOnce, FreshOpsOnTheSameTapeAndSharedLeavesAreNotConsumed) {
  Shared w(tensor({0.5}, f64), "w");
  Tape tape;
  const Var x = tape.variable(tensor({2.0}, f64));
  const Var wv = w;  // one read, one leaf node, used by both losses
  tape.backward(sum(x * wv));   // dx = w = 0.5, dw = x = 2
  tape.backward(sum(x * x * wv));  // a second step's loss recorded after: dx += 2 x w = 2, dw += x^2 = 4
  EXPECT_DOUBLE_EQ(x.grad().item(), 2.5);
  EXPECT_DOUBLE_EQ(w.grad().item(), 6.0);
  // A training loop reusing one tape: each step's forward is new.
  for (int step = 0; step < 3; ++step) tape.backward(sum(x * 3.0));
  EXPECT_DOUBLE_EQ(x.grad().item(), 2.5 + 9.0);
}

// An op node below a truncated-BPTT cut is not run by a pass that meets the cut, so it is
// neither consumed by it nor a reason to refuse it.
TEST(BackwardOnce, ACutStopsTheWalkAsItStopsThePass) {
  Tape tape;
  const Var x = tape.variable(tensor({1.0}, f64));
  const Var a = x * 2.0;
  const Var c = a * 3.0;
  TapeAccess::cut_gradients(tape, c.id(), c.id() + 1);
  tape.backward(sum(a));  // consumes a
  EXPECT_NO_THROW(tape.backward(sum(c)));  // reaches the cut c, never a
  EXPECT_DOUBLE_EQ(x.grad().item(), 2.0);
}

// grad() accumulates nothing: it does not consume, and a consumed graph does not stop it.
TEST(BackwardOnce, GradNeitherConsumesNorIsRefused) {
  Tape tape;
  const Var x = tape.variable(tensor({1.0, 3.0}, f64));
  const Var loss = sum(x * x);
  const Tensor want = tensor({2.0, 6.0}, f64);
  EXPECT_TRUE(same_bits(grad(loss, x).value(), want));
  EXPECT_TRUE(same_bits(grad(loss, x).value(), want));  // again: the same, nothing consumed
  EXPECT_TRUE(same_bits(x.grad(), zeros({2}, f64)));
  tape.backward(loss);  // grad() consumed nothing: the one backward is allowed
  EXPECT_TRUE(same_bits(x.grad(), want));
  EXPECT_TRUE(same_bits(grad(loss, x).value(), want));  // after backward: the same, x.grad() untouched
  EXPECT_TRUE(same_bits(grad(loss, x, {.create_graph = true}).value(), want));
  EXPECT_TRUE(same_bits(x.grad(), want));
}

// Second order: backward of a gradient recorded with create_graph, and the Hessian-vector
// product by grad twice. f = sum(x^3): df/dx = 3 x^2, d/dx <df/dx, v> = 6 x v.
TEST(BackwardOnce, SecondOrderStillWorks) {
  const Tensor x0 = tensor({1.0, -2.0}, f64), v = tensor({1.0, 0.5}, f64);
  {
    Tape tape;
    const Var x = tape.variable(x0);
    const Var f = sum(x * x * x);
    const Var g = grad(f, x, {.create_graph = true});
    tape.backward(sum(g * tape.constant(v)));
    EXPECT_TRUE(same_bits(x.grad(), tensor({6.0, -6.0}, f64)));
    EXPECT_TRUE(same_bits(grad(sum(g * tape.constant(v)), x).value(), tensor({6.0, -6.0}, f64)));
  }
  {
    // The recorded gradient runs through f's ops: after a backward of f itself, that
    // backward must have kept the graph.
    Tape tape;
    const Var x = tape.variable(x0);
    const Var f = sum(x * x * x);
    const Var g = grad(f, x, {.create_graph = true});
    tape.backward(f);
    const Var gv = sum(g * tape.constant(v));
    expect_clean_failure<GradientError>(tape, [&] { tape.backward(gv); }, {"retain_graph"});
    EXPECT_TRUE(same_bits(x.grad(), tensor({3.0, 12.0}, f64)));
  }
  {
    Tape tape;
    const Var x = tape.variable(x0);
    const Var f = sum(x * x * x);
    const Var g = grad(f, x, {.create_graph = true});
    tape.backward(f, {.retain_graph = true});
    tape.backward(sum(g * tape.constant(v)));
    EXPECT_TRUE(same_bits(x.grad(), tensor({3.0 + 6.0, 12.0 - 6.0}, f64)));
  }
}

// The checkpointed path: the segments a backward recomputed are released again, and a
// second backward is refused before recomputing anything.
struct CheckpointedElman {
  Shared W{tensor({{0.5, -0.3}, {0.2, 0.4}}, f64), "W"};
  Tensor xs = tensor({{0.1, 0.2}, {-0.3, 0.4}, {0.5, -0.6}, {0.7, 0.8}, {-0.9, 1.0}}, f64).view({5, 1, 2});
  Tensor h0 = tensor({{0.25, -0.5}}, f64);

  Var loss(Tape& tape, const Var& h0) const {
    auto r = scan([&](S a) { return tanh(a[0] + matmul(a[1], Var(W))); },
                  {.sequences = {tape.constant(xs)}, .outputs_info = {h0}, .checkpoint = Checkpoint::every_k(2)});
    return sum(r[0] * r[0]);
  }
};

TEST(BackwardOnce, CheckpointedScanRefusesASecondBackwardAndRetainsOnRequest) {
  CheckpointedElman m;
  Tensor once_W, once_h0;
  {
    Tape tape;
    const Var h0 = tape.variable(m.h0);
    const Var loss = m.loss(tape, h0);
    tape.backward(loss);
    once_W = m.W.grad().clone(), once_h0 = h0.grad().clone();
    const std::size_t held = tape.bytes_held();
    expect_clean_failure<GradientError>(tape, [&] { tape.backward(loss); }, {"recur::backward", "retain_graph"});
    EXPECT_TRUE(same_bits(m.W.grad(), once_W));
    EXPECT_TRUE(same_bits(h0.grad(), once_h0));
    EXPECT_EQ(tape.bytes_held(), held) << "the refused backward recomputed segments";
  }
  EXPECT_GT(max_abs_diff(once_W, zeros({2, 2}, f64)), 0.0);
  m.W.zero_grad();
  Tape tape;
  const Var h0 = tape.variable(m.h0);
  const Var loss = m.loss(tape, h0);
  tape.backward(loss, {.retain_graph = true});
  EXPECT_TRUE(same_bits(m.W.grad(), once_W));  // recomputation gives the same bits
  tape.backward(loss);
  EXPECT_TRUE(same_bits(m.W.grad(), once_W + once_W));
  EXPECT_TRUE(same_bits(h0.grad(), once_h0 + once_h0));
}

}  // namespace
}  // namespace recur
