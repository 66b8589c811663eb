#include "lstm_recur.hpp"

#include <span>
#include <vector>

namespace bench {

using recur::Tape;
using recur::Var;

RecurLstm::RecurLstm(std::int64_t steps)
    : xs_(uniform_tensor({steps, kBatch, kInput}, -1.f, 1.f, kLstmSeed)),
      wx_(uniform_tensor({kInput, 4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 1)),
      wh_(uniform_tensor({kHidden, 4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 2)),
      b_(uniform_tensor({4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 3)),
      h0_(recur::zeros({kBatch, kHidden})),
      c0_(recur::zeros({kBatch, kHidden})) {}

namespace {
// fn(x_t, h, c, Wx, Wh, b) -> (h, c): gates in the order i, f, g, o.
recur::StepResult cell(std::span<const Var> a) {
  const Var& x = a[0];
  const Var &h = a[1], &c = a[2], &wx = a[3], &wh = a[4], &b = a[5];
  const std::vector<Var> gates = recur::split(recur::matmul(x, wx) + recur::matmul(h, wh) + b, 1, 4);
  const Var c_next = recur::sigmoid(gates[1]) * c + recur::sigmoid(gates[0]) * recur::tanh(gates[2]);
  const Var h_next = recur::sigmoid(gates[3]) * recur::tanh(c_next);
  return {h_next, c_next};
}
}  // namespace

void RecurLstm::step(const recur::Checkpoint& checkpoint, std::size_t* bytes_held) const {
  Tape tape;
  const Var xs = tape.constant(xs_), h0 = tape.constant(h0_), c0 = tape.constant(c0_);
  const Var wx = tape.variable(wx_), wh = tape.variable(wh_), b = tape.variable(b_);
  const recur::ScanResult r = recur::scan(cell, {.sequences = {xs},
                                                 .outputs_info = {h0, c0},
                                                 .non_sequences = {wx, wh, b},
                                                 .checkpoint = checkpoint});
  const Var loss = recur::mean(r[0]);
  if (bytes_held) *bytes_held = tape.bytes_held();
  tape.backward(loss);
  benchmark::DoNotOptimize(wx.grad().raw_data());
  benchmark::DoNotOptimize(wh.grad().raw_data());
  benchmark::DoNotOptimize(b.grad().raw_data());
  benchmark::ClobberMemory();
}

}  // namespace bench
