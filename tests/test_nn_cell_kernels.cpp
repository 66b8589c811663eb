// One kernel per cell (ops/kernels/cell_kernels_detail.hpp), seen from outside: the per-step
// ops of pointwise.hpp and the fused layer op of fused_recurrence.hpp run the same
// arithmetic. With projections that add no rounding (w_ih the identity, w_hh zero, no
// bias: the fused op's pre-activations are then x itself), a fused direction and a chain
// of per-step ops fed x give the same bits, forward and backward (including the LSTM's
// replay of its cell states), in float32 and float64.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur::nn {
namespace {

struct Outcome {
  Tensor out, dx, dc0;  // dc0: LSTM only
};

struct StepCase {
  CellKind kind;
  Nonlinearity act;
  bool reverse;
  Tensor x, h0, c0, weight;  // x [T, B, G*H]: the pre-activations; weight: the loss's cotangent
  bool lstm() const { return kind == CellKind::lstm; }
};

StepCase make_setup(CellKind kind, Nonlinearity act, bool reverse, DType dtype, Generator& gen) {
  const std::int64_t steps = 5, batch = 3, n = 70;  // n > 64: the activation rows run in two chunks
  const std::int64_t gh = (kind == CellKind::lstm ? 4 : 1) * n;
  return {kind,
          act,
          reverse,
          normal({steps, batch, gh}, 0, 1.5, gen, dtype),
          normal({batch, n}, 0, 1, gen, dtype),
          normal({batch, n}, 0, 1, gen, dtype),
          normal({steps + (kind == CellKind::lstm ? 1 : 0), batch, n}, 0, 1, gen, dtype)};
}

Tensor identity(std::int64_t size, DType dtype) {
  Tensor m = zeros({size, size}, dtype);
  dispatch_floating("identity", dtype, [&]<class T>() {
    for (std::int64_t i = 0; i < size; ++i) m.data<T>()[i * size + i] = T(1);
  });
  return m;
}

Outcome fused(const StepCase& s) {
  Tape tape;
  const std::int64_t gh = s.x.size(2), n = s.h0.size(1);
  const Var x = tape.variable(s.x), h0 = tape.constant(s.h0), c0 = s.lstm() ? tape.variable(s.c0) : Var();
  const Var w_ih = tape.constant(identity(gh, s.x.dtype())), w_hh = tape.constant(zeros({gh, n}, s.x.dtype()));
  const Var out = fused_recurrence({.kind = s.kind, .nonlinearity = s.act, .reverse = s.reverse}, x, {w_ih, w_hh}, h0, c0);
  tape.backward(sum(out * tape.constant(s.weight)));
  return {out.value(), x.grad(), s.lstm() ? c0.grad() : Tensor()};
}

Outcome stepped(const StepCase& s) {
  Tape tape;
  const std::int64_t steps = s.x.size(0), n = s.h0.size(1);
  const Var x = tape.variable(s.x), c0 = s.lstm() ? tape.variable(s.c0) : Var();
  const Var zero = tape.constant(zeros({s.x.size(1), n}, s.x.dtype()));
  std::vector<Var> hs(static_cast<std::size_t>(steps));
  Var c = c0;
  for (std::int64_t k = 0; k < steps; ++k) {
    const std::int64_t t = s.reverse ? steps - 1 - k : k;
    const Var pre = index(x, 0, t);
    Var& h = hs[static_cast<std::size_t>(t)];
    if (s.lstm()) {
      const Var both = lstm_pointwise(pre, c);
      h = slice(both, 1, 0, n);
      c = slice(both, 1, n, 2 * n);
    } else {
      h = rnn_pointwise(pre, zero, s.act);
    }
  }
  if (s.lstm()) hs.push_back(c);
  const Var out = stack(hs, 0);
  tape.backward(sum(out * tape.constant(s.weight)));
  return {out.value(), x.grad(), s.lstm() ? c0.grad() : Tensor()};
}

TEST(CellKernels, PerStepOpsAndTheFusedOpGiveTheSameBits) {
  Generator gen(21);
  for (DType dtype : {DType::float32, DType::float64})
    for (bool reverse : {false, true})
      for (const auto& [kind, act] : {std::pair{CellKind::lstm, Nonlinearity::tanh},
                                      std::pair{CellKind::rnn, Nonlinearity::tanh},
                                      std::pair{CellKind::rnn, Nonlinearity::relu}}) {
        const StepCase s = make_setup(kind, act, reverse, dtype, gen);
        const Outcome a = fused(s), b = stepped(s);
        const std::string what = std::string(s.lstm() ? "lstm" : "rnn") + (act == Nonlinearity::relu ? " relu" : "") +
                                 (reverse ? " reverse " : " ") + std::string(name_of(dtype));
        ASSERT_EQ(a.out.shape(), b.out.shape()) << what;
        EXPECT_EQ(max_abs_diff(a.out, b.out), 0.0) << what;
        EXPECT_EQ(max_abs_diff(a.dx, b.dx), 0.0) << what;
        if (s.lstm()) {
          EXPECT_EQ(max_abs_diff(a.dc0, b.dc0), 0.0) << what;
        }
        EXPECT_GT(max_abs_diff(a.dx, zeros_like(a.dx)), 0.0) << what;  // the comparison is not of zeros
      }
}

TEST(CellKernels, FusedOpRejectsTruncateGradientBelowMinusOne) {
  Tape tape;
  const Var x = tape.variable(zeros({3, 2, 4}, DType::float64)), h0 = tape.variable(zeros({2, 5}, DType::float64));
  const Var w_ih = tape.variable(zeros({20, 4}, DType::float64)), w_hh = tape.variable(zeros({20, 5}, DType::float64));
  for (std::int64_t k : {std::int64_t{-2}, std::int64_t{-7}})
    recur::testing::expect_clean_failure<ValueError>(
        tape, [&] { fused_recurrence({.truncate_gradient = k}, x, {w_ih, w_hh}, h0, h0); },
        {"fused_recurrence", "truncate_gradient", std::to_string(k)});
  for (std::int64_t k : {std::int64_t{-1}, std::int64_t{0}, std::int64_t{2}})  // no truncation, none kept, the last 2
    EXPECT_EQ(fused_recurrence({.truncate_gradient = k}, x, {w_ih, w_hh}, h0, h0).shape(), (Shape{4, 2, 5}));
}

}  // namespace
}  // namespace recur::nn
