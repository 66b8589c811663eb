// A loop step's elementwise work shared over recur's threads (blas::step_work_tiles): a
// captured step's fused chain runs its blocks in tiles, a fused layer its cells' rows. Built under ThreadSanitizer too
// (test_threads*): every tile writes only its own elements and scratch. Against the same
// work on one thread (StepSplit::never), to the bit.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include <recur/recur.hpp>

#include "step_gemm_scope.hpp"
#include "values.hpp"

namespace recur {
namespace {

constexpr DType f64 = DType::float64;

// One training step of a hand-written LSTM cell in scan (captured: its gates' work one fused
// chain of B H = 8192 elements, four blocks), float64; its values and every gradient.
std::vector<Tensor> captured_lstm_step() {
  constexpr std::int64_t kT = 3, kB = 32, kI = 4, kH = 256;
  Generator gen(3);
  Tape tape;
  const Var wx = tape.variable(uniform({kI, 4 * kH}, -0.3, 0.3, gen, f64));
  const Var wh = tape.variable(uniform({kH, 4 * kH}, -0.1, 0.1, gen, f64));
  const Var b = tape.variable(uniform({4 * kH}, -0.1, 0.1, gen, f64));
  const Var xs = tape.variable(uniform({kT, kB, kI}, -1, 1, gen, f64));
  const Var z = tape.constant(zeros({kB, kH}, f64));
  auto cell = [](std::span<const Var> a) -> StepResult {
    const std::vector<Var> g = split(matmul(a[0], a[3]) + matmul(a[1], a[4]) + a[5], 1, 4);
    const Var c = sigmoid(g[1]) * a[2] + sigmoid(g[0]) * tanh(g[2]);
    return {sigmoid(g[3]) * tanh(c), c};
  };
  const ScanResult r = scan(cell, {.sequences = {xs}, .outputs_info = {z, z}, .non_sequences = {wx, wh, b},
                                   .capture = Capture::required});
  EXPECT_GE(r.capture.fused_chains, 1) << r.capture.reason;
  tape.backward(sum(r[0] * r[0]) + sum(r[1]));
  return {r[0].value(), r[1].value(), wx.grad(), wh.grad(), b.grad(), xs.grad()};
}

void expect_same_bits_shared(const std::string& what, const std::function<std::vector<Tensor>()>& step) {
  std::vector<Tensor> alone, shared;
  {
    const testing::UseStepSplit split(blas::StepSplit::never, 2);
    alone = step();
  }
  {
    const testing::UseStepSplit split(blas::StepSplit::always, 2);
    const testing::HelpersClaimFirst helpers_first;  // a helper's tiles in every shared piece of work
    const std::uint64_t helped = parallel::tile_team_helper_tiles();
    shared = step();
    EXPECT_GT(parallel::tile_team_helper_tiles(), helped) << what << ": no helper ran a tile";
  }
  ASSERT_EQ(shared.size(), alone.size()) << what;
  for (std::size_t i = 0; i < alone.size(); ++i)
    EXPECT_TRUE(testing::same_bytes(shared[i], alone[i])) << what << " result " << i;
}

TEST(StepWorkShared, ACapturedChainsBlocksGiveOneThreadsBits) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  expect_same_bits_shared("captured LSTM cell", captured_lstm_step);
}

// One training step of a fused layer, float64, its per-step products on OpenBLAS (so that
// only the cells' elementwise work shares tiles): B 16 and H 512, 8192 or more elements a
// step; half the sequences end early (lengths), and the LSTM is projected. Its output,
// final states and every gradient.
std::vector<Tensor> fused_layer_step(const std::string& cell, nn::RecurrentOptions o) {
  constexpr std::int64_t kT = 6, kB = 16;
  o.input_size = 4;
  o.hidden_size = 512;
  o.dtype = f64;
  Generator gen(11);
  Tape tape;
  const Var x = tape.variable(uniform({kT, kB, o.input_size}, -1, 1, gen, f64));
  std::vector<std::int64_t> lengths;
  for (std::int64_t b = 0; b < kB; ++b) lengths.push_back(b % 2 == 0 ? kT : 1 + b % kT);
  auto train = [&](const Module& m, const nn::RecurrentOutput& out) {
    Var loss = sum(out.output * out.output) + sum(out.h_n);
    if (out.c_n.defined()) loss = loss + sum(out.c_n * out.c_n);
    tape.backward(loss);
    std::vector<Tensor> values{out.output.value(), out.h_n.value(), x.grad()};
    for (const auto& [name, p] : m.named_parameters()) values.push_back(p.grad());
    return values;
  };
  if (cell == "lstm") {
    const nn::LSTM layer(o, gen);
    return train(layer, layer(x, {}, lengths));
  }
  if (cell == "gru") {
    const nn::GRU layer(o, gen);
    return train(layer, layer(x, {}, lengths));
  }
  const nn::RNN layer(o, gen);
  return train(layer, layer(x, {}, lengths));
}

TEST(StepWorkShared, AFusedLayersCellRowsGiveOneThreadsBits) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const testing::UseStepGemm openblas(blas::StepGemm::openblas);
  struct Case {
    std::string name, cell;
    nn::RecurrentOptions options;
  };
  const Case cases[] = {
      {"LSTM", "lstm", {}},
      {"projected LSTM, both directions", "lstm", {.proj_size = 96, .bidirectional = true}},
      {"GRU (PyTorch's form)", "gru", {}},
      {"GRU (ONNX's form), both directions", "gru", {.bidirectional = true, .linear_before_reset = false}},
      {"RNN (tanh)", "rnn", {}},
      {"RNN (relu)", "rnn", {.nonlinearity = nn::Nonlinearity::relu}},
  };
  for (const Case& c : cases) expect_same_bits_shared(c.name, [&] { return fused_layer_step(c.cell, c.options); });
}

}  // namespace
}  // namespace recur
