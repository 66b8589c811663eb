// scan's gradients: full BPTT against the same loop unrolled by hand, against finite
// differences (first and second order), truncation against detach at the cut,
// recomputation against the full tape (bit for bit).
#include <gtest/gtest.h>

#include <recur/recur.hpp>

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;

Tensor rnd(const Shape& s, std::uint64_t seed, double scale = 0.5) {
  Generator g(seed);
  return normal(s, 0.0, scale, g, f64);
}

// The seed's RNN with taps: x(n) = tanh(x(n-1) W + u(n) W_in1 + u(n-4) W_in2 + y(n-1) W_fb),
// y(n) = x(n-3) W_out; u taps [-4, 0], x taps [-3, -1], y tap [-1].
struct SeedRnn {
  static constexpr std::int64_t T = 6, nu = 2, nx = 3, ny = 2;
  Tensor u = rnd({T + 4, nu}, 1), x0 = rnd({3, nx}, 2), y0 = rnd({ny}, 3);
  Tensor W = rnd({nx, nx}, 4), W_in1 = rnd({nu, nx}, 5), W_in2 = rnd({nu, nx}, 6), W_fb = rnd({ny, nx}, 7),
         W_out = rnd({nx, ny}, 8);

  static StepResult step(S a) {
    const Var &u_tm4 = a[0], &u_t = a[1], &x_tm3 = a[2], &x_tm1 = a[3], &y_tm1 = a[4];
    const Var &w = a[5], &w_in1 = a[6], &w_in2 = a[7], &w_fb = a[8], &w_out = a[9];
    Var x_t = tanh(matmul(x_tm1, w) + matmul(u_t, w_in1) + matmul(u_tm4, w_in2) + matmul(y_tm1, w_fb));
    Var y_t = matmul(x_tm3, w_out);
    return {x_t, y_t};
  }

  // The loss through scan, and through a loop written out by hand.
  std::vector<Var> vars(Tape& tape) const {
    return {tape.variable(u), tape.variable(x0), tape.variable(y0), tape.variable(W), tape.variable(W_in1),
            tape.variable(W_in2), tape.variable(W_fb), tape.variable(W_out)};
  }
  static std::pair<Var, Var> with_scan(const std::vector<Var>& v, bool backwards) {
    auto r = scan(step, {.sequences = {Sequence(v[0], {-4, 0})},
                         .outputs_info = {OutputInfo(v[1], {-3, -1}), OutputInfo(v[2])},
                         .non_sequences = {v[3], v[4], v[5], v[6], v[7]},
                         .go_backwards = backwards,
                         .strict = true});
    return {r[0], r[1]};
  }
  static std::pair<Var, Var> by_hand(const std::vector<Var>& v, bool backwards) {
    std::vector<Var> xs{index(v[1], 0, 0), index(v[1], 0, 1), index(v[1], 0, 2)}, ys{v[2]};
    std::vector<Var> x_out, y_out;
    for (std::int64_t t = 0; t < T; ++t) {
      const std::int64_t p = backwards ? T - 1 - t : t;
      auto r = step(std::vector<Var>{index(v[0], 0, p), index(v[0], 0, p + 4), xs[xs.size() - 3], xs.back(),
                                     ys.back(), v[3], v[4], v[5], v[6], v[7]});
      xs.push_back(r.outputs[0]);
      ys.push_back(r.outputs[1]);
      x_out.push_back(r.outputs[0]);
      y_out.push_back(r.outputs[1]);
    }
    return {stack(std::span<const Var>(x_out)), stack(std::span<const Var>(y_out))};
  }
};

Var loss_of(const std::pair<Var, Var>& xy) { return sum(xy.first * xy.first) + sum(tanh(xy.second)); }

TEST(ScanGradients, SeedRnnWithTapsMatchesHandLoopForwardAndBackward) {
  SeedRnn m;
  for (bool backwards : {false, true}) {
    Tape tape;
    auto v = m.vars(tape);
    auto a = SeedRnn::with_scan(v, backwards);
    auto b = SeedRnn::by_hand(v, backwards);
    EXPECT_EQ(a.first.shape(), (Shape{SeedRnn::T, SeedRnn::nx}));
    EXPECT_EQ(max_abs_diff(a.first.value(), b.first.value()), 0.0);
    EXPECT_EQ(max_abs_diff(a.second.value(), b.second.value()), 0.0);
    Var la = loss_of(a), lb = loss_of(b);
    const auto ga = grad(std::vector<Var>{la}, v), gb = grad(std::vector<Var>{lb}, v);
    for (std::size_t i = 0; i < v.size(); ++i)
      EXPECT_LT(max_abs_diff(ga[i].value(), gb[i].value()), 1e-12) << "input " << i << " backwards " << backwards;
  }
}

TEST(ScanGradients, SeedRnnAgainstFiniteDifferencesFirstAndSecondOrder) {
  SeedRnn m;
  for (bool backwards : {false, true}) {
    const auto report = check_gradients(
        [&](S v) { return loss_of(SeedRnn::with_scan(std::vector<Var>(v.begin(), v.end()), backwards)); },
        {m.u, m.x0, m.y0, m.W, m.W_in1, m.W_in2, m.W_fb, m.W_out});
    EXPECT_TRUE(report.ok) << report.failure;
  }
}

// h_t = tanh(x_t W + h_{t-1} U + b): the RNN of the issue, parameters as Shared.
struct Elman {
  static constexpr std::int64_t T = 7, B = 2, I = 3, H = 4;
  Shared W{rnd({I, H}, 11), "W"}, U{rnd({H, H}, 12), "U"}, b{rnd({H}, 13), "b"};
  Tensor xs = rnd({T, B, I}, 14, 1.0), h0 = rnd({B, H}, 15);
  StepResult step(S a) const { return tanh(matmul(a[0], Var(W)) + matmul(a[1], Var(U)) + Var(b)); }
};

// Truncation keeps the last k iterations: the same as computing the earlier ones without a
// gradient and cutting the carry (detach) where the kept ones start.
TEST(ScanGradients, TruncateGradientEqualsDetachAtTheCut) {
  Elman m;
  for (std::int64_t k : {0, 1, 3, 7, 20}) {
    std::vector<Tensor> scan_grads, hand_grads;
    {
      Tape tape;
      Var xs = tape.variable(m.xs), h0 = tape.variable(m.h0);
      auto r = scan([&](S a) { return m.step(a); },
                    {.sequences = {xs}, .outputs_info = {h0}, .truncate_gradient = k});
      Var loss = sum(r[0] * r[0]);
      m.W.zero_grad(), m.U.zero_grad(), m.b.zero_grad();
      auto g = grad(std::vector<Var>{loss}, std::vector<Var>{xs, h0, Var(m.W), Var(m.U), Var(m.b)});
      for (auto& x : g) scan_grads.push_back(x.value());
    }
    {
      Tape tape;
      Var xs = tape.variable(m.xs), h0 = tape.variable(m.h0);
      Var h = h0;
      std::vector<Var> hs;
      const std::int64_t cut = std::max<std::int64_t>(0, Elman::T - k);
      for (std::int64_t t = 0; t < Elman::T; ++t) {
        if (t < cut) {
          Var early = detach(m.step(std::vector<Var>{detach(index(xs, 0, t)), detach(h)}).outputs[0]);
          h = early;
        } else {
          if (t == cut && cut > 0) h = detach(h);
          h = m.step(std::vector<Var>{index(xs, 0, t), h}).outputs[0];
        }
        hs.push_back(h);
      }
      Var out = stack(std::span<const Var>(hs));
      Var loss = sum(out * out);
      auto g = grad(std::vector<Var>{loss}, std::vector<Var>{xs, h0, Var(m.W), Var(m.U), Var(m.b)});
      for (auto& x : g) hand_grads.push_back(x.value());
    }
    for (std::size_t i = 0; i < scan_grads.size(); ++i)
      EXPECT_LT(max_abs_diff(scan_grads[i], hand_grads[i]), 1e-12) << "k = " << k << ", input " << i;
  }
}

// The worked example of docs/tbptt.md: h_t = w h_{t-1}, h_0 = 1, w = 2, four steps.
// Full BPTT: d h_4 / dw = 4 w^3 = 32. truncate_gradient = 2 differentiates only the last two
// steps, h_4 = w (w h_2) with h_2 = 4 held fixed: h_3 + w h_2 = 8 + 8 = 16.
TEST(ScanGradients, TruncationWorkedExampleOfTheGuide) {
  for (auto [k, expected] : {std::pair{-1, 32.0}, std::pair{2, 16.0}, std::pair{1, 8.0}}) {
    Tape tape;
    Var w = tape.variable(full({}, 2.0, f64));
    auto r = scan([](S a) { return a[0] * a[1]; },
                  {.outputs_info = {tape.constant(full({}, 1.0, f64))}, .non_sequences = {w}, .n_steps = 4,
                   .truncate_gradient = k, .keep = Keep::last});
    EXPECT_DOUBLE_EQ(r[0].value().item(), 16.0);
    EXPECT_DOUBLE_EQ(grad(r[0], w).value().item(), expected) << "truncate_gradient = " << k;
  }
}

TEST(ScanGradients, TruncationAlsoAppliesToSharedVariablesWithBackward) {
  Elman m;
  auto run = [&](std::int64_t k) {
    Tape tape;
    auto r = scan([&](S a) { return m.step(a); },
                  {.sequences = {Var(m.xs)}, .outputs_info = {Var(m.h0)}, .truncate_gradient = k});
    m.W.zero_grad();
    tape.backward(sum(r[0]));
    return m.W.grad();
  };
  const Tensor full = run(-1), none = run(0), some = run(2);
  EXPECT_EQ(max_abs_diff(none, zeros_like(none)), 0.0);
  EXPECT_GT(max_abs_diff(full, some), 1e-6);
  EXPECT_GT(max_abs_diff(some, none), 1e-6);
}

// A data-dependent number of steps: h <- h * w + c until h > limit, differentiable.
TEST(ScanGradients, UntilIsDifferentiableThroughTheStepsRun) {
  auto f = [](S v) {
    auto r = scan(
        [](S a) {
          Var h = a[0] * a[1] + a[2];
          return StepResult({h}, {}, until(greater(h, scalar_like(h, 5.0))));
        },
        {.outputs_info = {v[0]}, .non_sequences = {v[1], v[2]}, .n_steps = 50});
    return sum(r[0] * r[0]);
  };
  const std::vector<Tensor> x{tensor({0.3}, f64).view({}), tensor({1.7}, f64).view({}), tensor({0.2}, f64).view({})};
  const auto report = check_gradients(f, x);
  EXPECT_TRUE(report.ok) << report.failure;
  // And the hand loop: the same number of steps, the same gradient.
  Tape tape;
  std::vector<Var> v{tape.variable(x[0]), tape.variable(x[1]), tape.variable(x[2])};
  Var h = v[0];
  std::vector<Var> hs;
  for (int t = 0; t < 50; ++t) {
    h = h * v[1] + v[2];
    hs.push_back(h);
    if (h.value().item() > 5.0) break;
  }
  Var by_hand = sum(stack(std::span<const Var>(hs)) * stack(std::span<const Var>(hs)));
  Var with_scan = f(v);
  EXPECT_EQ(with_scan.value().item(), by_hand.value().item());
  const auto ga = grad(std::vector<Var>{with_scan}, v), gb = grad(std::vector<Var>{by_hand}, v);
  for (int i = 0; i < 3; ++i) EXPECT_LT(max_abs_diff(ga[i].value(), gb[i].value()), 1e-12);
}

TEST(ScanGradients, UntilWithTruncation) {
  // 6 steps run; truncate_gradient = 2 keeps the last two: d/dw of sum(h) by hand.
  Tape tape;
  Var h0 = tape.variable(scalar(1.0, f64)), w = tape.variable(scalar(2.0, f64));
  auto r = scan(
      [](S a) {
        Var h = a[0] * a[1];
        return StepResult({h}, {}, until(greater(h, scalar_like(h, 45.0))));
      },
      {.outputs_info = {h0}, .non_sequences = {w}, .n_steps = 100, .truncate_gradient = 2});
  ASSERT_EQ(r.steps, 6);  // 2, 4, ..., 64
  auto g = grad(std::vector<Var>{sum(r[0])}, std::vector<Var>{h0, w});
  // Kept: h5 = h4 * w (h4 = 16 constant) and h6 = h5 * w: d(h5 + h6)/dw = h4 + 2 h4 w = 16 + 64.
  EXPECT_DOUBLE_EQ(g[1].value().item(), 80.0);
  EXPECT_DOUBLE_EQ(g[0].value().item(), 0.0);
}

TEST(ScanGradients, SharedUpdatesAreDifferentiable) {
  // a <- a * w ten times inside scan; d updates[a] / dw = 10 a0 w^9, d/da0 = w^10.
  Shared a(scalar(1.5, f64), "a");
  Tape tape;
  Var w = tape.variable(scalar(1.1, f64));
  auto r = scan([&](S) { return Updates{{a, Var(a) * w}}; }, {.n_steps = 10});
  Var final_a = r.updates[a];
  EXPECT_NEAR(final_a.value().item(), 1.5 * std::pow(1.1, 10), 1e-12);
  a.zero_grad();
  tape.backward(final_a);
  EXPECT_NEAR(w.grad().item(), 10 * 1.5 * std::pow(1.1, 9), 1e-10);
  EXPECT_NEAR(a.grad().item(), std::pow(1.1, 10), 1e-12);
}

TEST(ScanGradients, CapturedOuterVariablesReceiveGradients) {
  Tape tape;
  Var xs = tape.variable(rnd({5, 3}, 21));
  Var captured = tape.variable(rnd({3}, 22));
  auto r = scan([&](S a) { return tanh(a[0] * captured + a[1]); },
                {.sequences = {xs}, .outputs_info = {Var(zeros({3}, f64))}});
  Var g = grad(sum(r[0]), captured);
  // By hand.
  Var h = tape.constant(zeros({3}, f64));
  std::vector<Var> hs;
  for (int t = 0; t < 5; ++t) hs.push_back(h = tanh(index(xs, 0, t) * captured + h));
  Var g2 = grad(sum(stack(std::span<const Var>(hs))), captured);
  EXPECT_LT(max_abs_diff(g.value(), g2.value()), 1e-14);
  EXPECT_GT(max_abs_diff(g.value(), zeros({3}, f64)), 1e-3);
}

TEST(ScanGradients, HessianVectorProductOfAnRnnLossThroughScan) {
  Elman m;
  // Parameters as inputs of the checked function: second order through scan.
  auto f = [&](S v) {
    auto r = scan([](S a) { return tanh(matmul(a[0], a[2]) + matmul(a[1], a[3])); },
                  {.sequences = {v[0]}, .outputs_info = {v[1]}, .non_sequences = {v[2], v[3]}});
    return mean(r[0] * r[0]);
  };
  const auto report = check_gradients(f, {m.xs, m.h0, m.W.value(), m.U.value()});
  EXPECT_TRUE(report.ok) << report.failure;
  EXPECT_GT(report.max_error_second, 0.0);  // second order was checked
}

// Recomputation: the same gradients bit for bit, less memory held.
TEST(ScanGradients, CheckpointGivesBitIdenticalGradientsAndHoldsLess) {
  Elman m;
  auto run = [&](Checkpoint c, std::size_t* bytes) {
    Tape tape;
    Var xs = tape.variable(m.xs), h0 = tape.variable(m.h0);
    auto r = scan([&](S a) { return m.step(a); },
                  {.sequences = {xs}, .outputs_info = {h0}, .checkpoint = c});
    Var loss = sum(r[0] * r[0]);
    *bytes = tape.bytes_held();
    m.W.zero_grad(), m.U.zero_grad(), m.b.zero_grad();
    tape.backward(loss);
    return std::vector<Tensor>{xs.grad(), h0.grad(), m.W.grad(), m.U.grad(), m.b.grad()};
  };
  std::size_t full_bytes = 0, k_bytes = 0, auto_bytes = 0;
  const auto full = run(Checkpoint::none(), &full_bytes);
  const auto every2 = run(Checkpoint::every_k(2), &k_bytes);
  const auto automatic = run(Checkpoint::auto_sqrt(), &auto_bytes);
  for (std::size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(max_abs_diff(full[i], every2[i]), 0.0) << i;
    EXPECT_EQ(max_abs_diff(full[i], automatic[i]), 0.0) << i;
  }
  EXPECT_LT(k_bytes, full_bytes);
  EXPECT_LT(auto_bytes, full_bytes);
}

TEST(ScanGradients, CheckpointWithTapsBackwardsAndSecondOrder) {
  SeedRnn m;
  for (bool backwards : {false, true}) {
    std::vector<Tensor> results[2];
    for (int mode = 0; mode < 2; ++mode) {
      Tape tape;
      auto v = m.vars(tape);
      auto r = scan(SeedRnn::step, {.sequences = {Sequence(v[0], {-4, 0})},
                                    .outputs_info = {OutputInfo(v[1], {-3, -1}), OutputInfo(v[2])},
                                    .non_sequences = {v[3], v[4], v[5], v[6], v[7]},
                                    .go_backwards = backwards,
                                    .checkpoint = mode ? Checkpoint::every_k(2) : Checkpoint::none()});
      Var loss = loss_of({r[0], r[1]});
      auto g = grad(std::vector<Var>{loss}, v, {}, {.create_graph = true});
      Var gsum = sum(g[3] * g[3]);  // a second-order quantity through the scan
      auto h = grad(std::vector<Var>{gsum}, v);
      for (auto& x : g) results[mode].push_back(x.value());
      for (auto& x : h) results[mode].push_back(x.value());
    }
    for (std::size_t i = 0; i < results[0].size(); ++i)
      EXPECT_EQ(max_abs_diff(results[0][i], results[1][i]), 0.0) << i << " backwards " << backwards;
  }
}

}  // namespace
}  // namespace recur
