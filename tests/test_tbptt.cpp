// TruncatedBptt: TBPTT(k1, k2) against gradients computed by hand (forward-mode in plain
// doubles over each window), k1 = k2 = T against one full backward, pieces of any size,
// bounded memory, and argument errors.
#include <gtest/gtest.h>

#include <cmath>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

constexpr DType f64 = DType::float64;

// The scalar linear RNN h_t = w * h_{t-1} + x_t with loss_t = h_t^2 / 2, as a chunk model.
ChunkModel linear_rnn(const Shared& w) {
  return [w](std::span<const Var> state, const Tensor& xs, const Tensor&, std::int64_t count_from) {
    Var h = state[0];
    Var loss;
    for (std::int64_t t = 0; t < xs.shape()[0]; ++t) {
      h = Var(w) * h + Var(index(xs, 0, t));
      if (t >= count_from) {
        Var l = h * h * 0.5;
        loss = loss.defined() ? loss + l : l;
      }
    }
    return ChunkResult{loss, {h}};
  };
}

struct HandWindow {
  double grad = 0;   // d(mean counted loss)/dw
  double carry = 0;  // h at the next window's start
};

// Window ending at `end` of TBPTT(k1, k2) over xs with h_{-1} = h0, by forward-mode
// differentiation in doubles: h restarts at c = max(0, end - k2) from its true value with
// dh/dw = 0 there (the detach).
HandWindow hand_window(const std::vector<double>& xs, double w, double h0, std::int64_t k1, std::int64_t k2,
                       std::int64_t done, std::int64_t end, std::int64_t next_carry) {
  const std::int64_t c = std::max<std::int64_t>(0, done + k1 - k2);
  double h = h0;
  for (std::int64_t t = 0; t < c; ++t) h = w * h + xs[t];
  HandWindow out;
  double dh = 0;
  if (next_carry == c) out.carry = h;
  for (std::int64_t t = c; t < end; ++t) {
    dh = h + w * dh;
    h = w * h + xs[t];
    if (t >= done) out.grad += h * dh;
    if (t + 1 == next_carry) out.carry = h;
  }
  out.grad /= static_cast<double>(end - done);
  return out;
}

void check_against_hand(std::int64_t k1, std::int64_t k2, std::int64_t length, std::vector<std::int64_t> pieces) {
  SCOPED_TRACE(::testing::Message() << "k1=" << k1 << " k2=" << k2);
  std::vector<double> xs;
  for (std::int64_t t = 0; t < length; ++t) xs.push_back(std::sin(0.7 * static_cast<double>(t)) + 0.3);
  const double w_value = 0.83, h0 = 0.4;
  Shared w(full({}, w_value, f64), "w");
  TruncatedBptt tbptt({.k1 = k1, .k2 = k2}, {full({}, h0, f64)}, linear_rnn(w));

  std::int64_t done = 0, windows = 0;
  auto check = [&](const WindowReport& r) {
    const std::int64_t next_carry = tbptt.carried_position();
    const HandWindow hand = hand_window(xs, w_value, h0, k1, k2, done, r.end, next_carry);
    EXPECT_NEAR(w.grad().item(), hand.grad, 1e-12) << "window ending at " << r.end;
    EXPECT_NEAR(tbptt.carried_state()[0].item(), hand.carry, 1e-12) << "window ending at " << r.end;
    EXPECT_EQ(r.counted, r.end - done);
    EXPECT_EQ(r.steps, r.end - std::max<std::int64_t>(0, done + k1 - k2));
    done = r.end;
    ++windows;
    w.zero_grad();
  };
  std::int64_t at = 0;
  for (std::int64_t n : pieces) {
    Tensor piece = Tensor::empty({n}, f64);
    for (std::int64_t i = 0; i < n; ++i) piece.data<double>()[i] = xs[at + i];
    tbptt.feed(piece, Tensor(), check);
    at += n;
  }
  ASSERT_EQ(at, length);
  tbptt.flush(check);
  EXPECT_EQ(done, length);
  EXPECT_EQ(windows, (length + k1 - 1) / k1);
}

TEST(TruncatedBptt, ChunkedEqualsHandComputedGradients) { check_against_hand(3, 3, 11, {11}); }
TEST(TruncatedBptt, LongerWindowThanPeriod) { check_against_hand(2, 5, 11, {4, 1, 6}); }
TEST(TruncatedBptt, WindowBetweenOneAndTwoPeriods) { check_against_hand(3, 4, 13, {1, 1, 5, 6}); }
TEST(TruncatedBptt, EveryStepThroughThree) { check_against_hand(1, 3, 7, {7}); }

// Builds the RNN h_t = tanh(h_{t-1} W + x_t U) with per-step loss sum((h_t - y_t)^2).
struct SmallRnn {
  Shared W, U;
  explicit SmallRnn(Generator& gen)
      : W(normal({3, 3}, 0.0, 0.5, gen, f64), "W"), U(normal({2, 3}, 0.0, 0.5, gen, f64), "U") {}
  ChunkModel model() const {
    return [W = W, U = U](std::span<const Var> state, const Tensor& xs, const Tensor& ys, std::int64_t from) {
      Var h = state[0], loss;
      for (std::int64_t t = 0; t < xs.shape()[0]; ++t) {
        h = tanh(matmul(h, Var(W)) + matmul(Var(index(xs, 0, t)), Var(U)));
        if (t < from) continue;
        Var l = sum(square_error(h, index(ys, 0, t)));
        loss = loss.defined() ? loss + l : l;
      }
      return ChunkResult{loss, {h}};
    };
  }
  static Var square_error(const Var& h, const Tensor& y) { return (h - Var(y)) * (h - Var(y)); }
};

TEST(TruncatedBptt, OneWindowOverTheWholeStreamIsFullBptt) {
  Generator gen(3);
  const std::int64_t T = 9;
  const Tensor xs = normal({T, 4, 2}, 0.0, 1.0, gen, f64), ys = normal({T, 4, 3}, 0.0, 0.5, gen, f64);
  const Tensor h0 = normal({4, 3}, 0.0, 0.5, gen, f64);
  SmallRnn rnn(gen);

  // Full BPTT on one tape: the mean over T steps of the per-step losses.
  {
    Tape tape;
    ChunkResult r = rnn.model()(std::vector<Var>{tape.constant(h0)}, xs, ys, 0);
    tape.backward(r.loss_sum * (1.0 / T));
  }
  const Tensor full_W = rnn.W.grad(), full_U = rnn.U.grad();
  rnn.W.zero_grad();
  rnn.U.zero_grad();

  TruncatedBptt tbptt({.k1 = T, .k2 = T}, {h0}, rnn.model());
  int windows = 0;
  for (std::int64_t at = 0; at < T; at += 2) {
    const std::int64_t stop = std::min(T, at + 2);
    tbptt.feed(slice(xs, 0, at, stop), slice(ys, 0, at, stop), [&](const WindowReport&) { ++windows; });
  }
  ASSERT_EQ(windows, 1);
  EXPECT_TRUE(allclose(rnn.W.grad(), full_W, 1e-13, 1e-13));
  EXPECT_TRUE(allclose(rnn.U.grad(), full_U, 1e-13, 1e-13));
}

// A caller may refill the buffer it fed: the steps kept for later windows are not read
// from it. Feeding one buffer refilled in place gives the window losses of fresh pieces.
TEST(TruncatedBptt, RefillingTheFedBufferChangesNothing) {
  Generator gen(4);
  const std::int64_t T = 20, piece = 10;
  const Tensor xs = normal({T, 4, 2}, 0.0, 1.0, gen, f64), ys = normal({T, 4, 3}, 0.0, 0.5, gen, f64);
  SmallRnn rnn(gen);
  auto losses = [&](bool refill) {
    TruncatedBptt tbptt({.k1 = 4, .k2 = 6}, {zeros({4, 3}, f64)}, rnn.model());
    std::vector<double> out;
    Tensor bx = slice(xs, 0, 0, piece).clone(), by = slice(ys, 0, 0, piece).clone();
    for (std::int64_t at = 0; at < T; at += piece) {
      if (refill) {  // the same buffers, overwritten with the next piece
        std::copy_n(slice(xs, 0, at, at + piece).data<double>(), bx.numel(), bx.data<double>());
        std::copy_n(slice(ys, 0, at, at + piece).data<double>(), by.numel(), by.data<double>());
      } else {
        bx = slice(xs, 0, at, at + piece).clone();
        by = slice(ys, 0, at, at + piece).clone();
      }
      tbptt.feed(bx, by, [&](const WindowReport& r) { out.push_back(r.loss); });
    }
    rnn.W.zero_grad();
    rnn.U.zero_grad();
    return out;
  };
  const std::vector<double> fresh = losses(false), refilled = losses(true);
  ASSERT_EQ(fresh.size(), 5u);
  EXPECT_EQ(fresh, refilled);
}

TEST(TruncatedBptt, MemoryIsBoundedByTheWindowNotTheStream) {
  Generator gen(5);
  SmallRnn rnn(gen);
  auto max_bytes = [&](std::int64_t length) {
    const Tensor xs = normal({length, 4, 2}, 0.0, 1.0, gen, f64), ys = normal({length, 4, 3}, 0.0, 0.5, gen, f64);
    TruncatedBptt tbptt({.k1 = 5, .k2 = 10}, {zeros({4, 3}, f64)}, rnn.model());
    std::size_t most = 0, windows = 0;
    tbptt.feed(xs, ys, [&](const WindowReport& r) {
      most = std::max(most, r.tape_bytes);
      ++windows;
    });
    EXPECT_EQ(windows, static_cast<std::size_t>(length / 5));
    return most;
  };
  const std::size_t short_stream = max_bytes(40), long_stream = max_bytes(800);
  EXPECT_GT(short_stream, 0u);
  EXPECT_EQ(short_stream, long_stream);
}

TEST(TruncatedBptt, BadArguments) {
  Shared w(full({}, 0.5, f64), "w");
  EXPECT_THROW(TruncatedBptt({.k1 = 0}, {full({}, 0.0, f64)}, linear_rnn(w)), ValueError);
  EXPECT_THROW(TruncatedBptt({.k1 = 4, .k2 = 3}, {full({}, 0.0, f64)}, linear_rnn(w)), ValueError);
  TruncatedBptt tbptt({.k1 = 2}, {full({}, 0.0, f64)}, linear_rnn(w));
  try {
    tbptt.feed(zeros({3}, f64), zeros({4}, f64), {});
    FAIL() << "expected a ShapeError";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[3]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("[4]"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tbptt.position(), 0);
  EXPECT_FALSE(w.has_grad());
}

}  // namespace
}  // namespace recur::nn
