// Tapes on different threads are independent; steady-state loops reuse pooled buffers.
#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <thread>

#include <recur/recur.hpp>

namespace recur {
namespace {

// One step of least squares on a batch: loss = mean((x W + b - y)^2).
Var step_loss(const Shared& w, const Shared& b, const Tensor& x, const Tensor& y) {
  return mean(pow(matmul(Var(x), Var(w)) + Var(b) - Var(y), 2.0));
}

void sgd(const Shared& p, double lr) {
  Shared q = p;
  Tensor v = q.mutable_value();
  const Tensor g = p.grad();
  for (std::int64_t i = 0; i < v.numel(); ++i) v.data<double>()[i] -= lr * g.data<double>()[i];
}

Tensor batch(int seed, const Shape& shape) {
  Tensor t = Tensor::empty(shape, DType::float64);
  for (std::int64_t i = 0; i < t.numel(); ++i) t.data<double>()[i] = std::sin(0.37 * (i + 1) * (seed + 1));
  return t;
}

TEST(Threads, TwoThreadsTrainOneSetOfSharedVariables) {
  constexpr int kSteps = 50;
  auto init = [] {
    return std::pair{Shared(full({3, 2}, 0.1, DType::float64), "w"), Shared(zeros({2}, DType::float64), "b")};
  };
  // Reference: the same gradients computed on one thread, one tape per half-batch.
  auto [w_ref, b_ref] = init();
  for (int s = 0; s < kSteps; ++s) {
    for (int t = 0; t < 2; ++t) {
      Tape tape;
      tape.backward(step_loss(w_ref, b_ref, batch(2 * s + t, {4, 3}), batch(100 + 2 * s + t, {4, 2})));
    }
    sgd(w_ref, 0.05);
    sgd(b_ref, 0.05);
    w_ref.zero_grad();
    b_ref.zero_grad();
  }
  // Two threads, each with its own tapes, accumulating into the same Shared gradients.
  auto [w, b] = init();
  std::barrier sync(2, []() noexcept {});
  auto worker = [&, &w = w, &b = b](int t) {  // init-captures: Clang 14 cannot capture structured bindings
    for (int s = 0; s < kSteps; ++s) {
      {
        Tape tape;
        tape.backward(step_loss(w, b, batch(2 * s + t, {4, 3}), batch(100 + 2 * s + t, {4, 2})));
      }
      sync.arrive_and_wait();
      if (t == 0) {
        sgd(w, 0.05);
        sgd(b, 0.05);
        w.zero_grad();
        b.zero_grad();
      }
      sync.arrive_and_wait();
    }
  };
  std::thread a(worker, 0), c(worker, 1);
  a.join();
  c.join();
  // Addition of the two half-gradients may happen in either order: equal to rounding.
  EXPECT_LT(max_abs_diff(w.value(), w_ref.value()), 1e-12);
  EXPECT_LT(max_abs_diff(b.value(), b_ref.value()), 1e-12);
  EXPECT_GT(max_abs_diff(w.value(), full({3, 2}, 0.1, DType::float64)), 1e-3);  // it did train
}

TEST(Pool, SteadyStateTrainingLoopDoesNotCallTheSystemAllocator) {
  Shared w(full({8, 4}, 0.1), "w"), b(zeros({4}), "b");
  const Tensor x = ones({16, 8}), y = zeros({16, 4});
  auto step = [&] {
    {
      Tape tape;
      tape.backward(mean(pow(tanh(matmul(Var(x), Var(w)) + Var(b)) - Var(y), 2.0)));
    }
    w.zero_grad();
    b.zero_grad();
  };
  for (int i = 0; i < 5; ++i) step();  // warm the pool
  const auto before = memory::pool_stats();
  for (int i = 0; i < 20; ++i) step();
  const auto after = memory::pool_stats();
  EXPECT_EQ(after.system_allocations, before.system_allocations);
  EXPECT_GT(after.pool_hits, before.pool_hits + 20 * 10);
}

}  // namespace
}  // namespace recur
