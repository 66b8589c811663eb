// BackwardObserver: each Shared the pass reaches is reported once, after its last gradient
// contribution (its gradient then equals the one after the pass), in the order the reverse
// loop leaves them behind; grad() and an unread Shared report nothing; scopes nest.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include <recur/recur.hpp>

namespace recur {
namespace {

constexpr DType f64 = DType::float64;

// Records each report and the gradient the Shared held at that moment.
struct Recorder : BackwardObserver {
  std::vector<std::string> order;
  std::map<std::string, Tensor> grad_when_final;
  int polls = 0;
  void gradient_final(const Shared& s) override {
    order.push_back(s.name());
    grad_when_final[s.name()] = s.grad().clone();
  }
  void between_nodes() override { ++polls; }
};

void expect_equal(const Tensor& a, const Tensor& b) {
  ASSERT_EQ(a.shape(), b.shape());
  for (std::int64_t i = 0; i < a.numel(); ++i) EXPECT_EQ(a.data<double>()[i], b.data<double>()[i]);
}

TEST(BackwardObserver, ReportsEachReadSharedOnceWithItsFinalGradient) {
  Generator gen(3);
  Shared w1(normal({3, 3}, 0, 1, gen, f64), "w1"), w2(normal({3, 3}, 0, 1, gen, f64), "w2");
  Shared unused(normal({2}, 0, 1, gen, f64), "unused");
  Recorder recorder;
  ObserveBackward observing(recorder);
  Tape tape;
  // w1 is read first (lowest node) and used again late: its report must wait for the end.
  Var x = tape.constant(normal({3}, 0, 1, gen, f64));
  Var h = tanh(matmul(Var(w1), x));
  h = tanh(matmul(Var(w2), h));
  h = tanh(matmul(Var(w1), h));  // the same read node as the first use
  tape.backward(sum(h * h));
  ASSERT_EQ(recorder.order, (std::vector<std::string>{"w2", "w1"}));  // w2's lowest read is higher
  expect_equal(recorder.grad_when_final["w1"], w1.grad());
  expect_equal(recorder.grad_when_final["w2"], w2.grad());
  EXPECT_GT(recorder.polls, 0);
  EXPECT_FALSE(unused.has_grad());
}

TEST(BackwardObserver, ReportsBeforeThePassEndsWhenLaterNodesRemain) {
  Generator gen(4);
  Shared top(normal({4}, 0, 1, gen, f64), "top"), bottom(normal({4}, 0, 1, gen, f64), "bottom");
  struct SeesProgress : BackwardObserver {
    Shared bottom;
    bool bottom_had_grad_when_top_final = true;
    void gradient_final(const Shared& s) override {
      if (s.name() == "top") bottom_had_grad_when_top_final = bottom.has_grad();
    }
  } observer;
  observer.bottom = bottom;
  ObserveBackward observing(observer);
  Tape tape;
  Var b = Var(bottom) * 2.0;
  Var t = b * Var(top);
  tape.backward(sum(t));
  // top's report came while bottom was still waiting for its gradient: work can overlap.
  EXPECT_FALSE(observer.bottom_had_grad_when_top_final);
  EXPECT_TRUE(bottom.has_grad());
}

TEST(BackwardObserver, GradReportsNothingAndScopesNest) {
  Generator gen(5);
  Shared w(normal({2}, 0, 1, gen, f64), "w");
  Recorder outer, inner;
  ObserveBackward observing_outer(outer);
  {
    ObserveBackward observing_inner(inner);
    Tape tape;
    Var y = sum(Var(w) * Var(w));
    (void)grad(y, tape.read(w));
    EXPECT_TRUE(inner.order.empty());
    tape.backward(y);
  }
  EXPECT_EQ(inner.order, std::vector<std::string>{"w"});
  EXPECT_TRUE(outer.order.empty());
  EXPECT_EQ(backward_observer(), &outer);
  Tape tape;
  tape.backward(sum(Var(w)));
  EXPECT_EQ(outer.order, std::vector<std::string>{"w"});
}

}  // namespace
}  // namespace recur
