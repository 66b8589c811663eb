#include "scan_cells.hpp"

#include <span>
#include <vector>

namespace bench {

using recur::StepResult;
using recur::Var;

const char* form_name(CellForm form) {
  switch (form) {
    case CellForm::lstm_merged: return "lstm";
    case CellForm::lstm_per_gate: return "lstm_per_gate";
    default: return "gru";
  }
}

namespace {

// Each form's parameters: products with x are [I, n], with h [H, n], biases [n].
std::vector<recur::Shape> parameter_shapes(CellForm form, const rnn::Config& c) {
  const std::int64_t i = c.input, h = c.hidden;
  switch (form) {
    case CellForm::lstm_merged: return {{i, 4 * h}, {h, 4 * h}, {4 * h}};
    case CellForm::lstm_per_gate: {
      std::vector<recur::Shape> shapes;
      for (int gate = 0; gate < 4; ++gate) shapes.insert(shapes.end(), {{i, h}, {h, h}, {h}});
      return shapes;
    }
    default: return {{i, 3 * h}, {h, 3 * h}, {3 * h}, {3 * h}};
  }
}

// a = (x_t, h, c, Wx, Wh, b): gates i, f, g, o from one product per operand.
StepResult lstm_merged(std::span<const Var> a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  const std::vector<Var> g = recur::split(recur::matmul(x, a[3]) + recur::matmul(h, a[4]) + a[5], 1, 4);
  const Var c_next = recur::sigmoid(g[1]) * c + recur::sigmoid(g[0]) * recur::tanh(g[2]);
  return {recur::sigmoid(g[3]) * recur::tanh(c_next), c_next};
}

// a = (x_t, h, c, then per gate i, f, g, o: W_x, U_h, b).
StepResult lstm_per_gate(std::span<const Var> a) {
  const Var &x = a[0], &h = a[1], &c = a[2];
  auto pre = [&](int gate) { return recur::matmul(x, a[3 + 3 * gate]) + recur::matmul(h, a[4 + 3 * gate]) + a[5 + 3 * gate]; };
  const Var i = recur::sigmoid(pre(0)), f = recur::sigmoid(pre(1)), g = recur::tanh(pre(2)), o = recur::sigmoid(pre(3));
  const Var c_next = f * c + i * g;
  return {o * recur::tanh(c_next), c_next};
}

// a = (x_t, h, W_ih, W_hh, b_ih, b_hh): PyTorch's GRU, r applied after the hidden product.
StepResult gru_merged(std::span<const Var> a) {
  const Var &x = a[0], &h = a[1];
  const std::vector<Var> gx = recur::split(recur::matmul(x, a[2]) + a[4], 1, 3);
  const std::vector<Var> gh = recur::split(recur::matmul(h, a[3]) + a[5], 1, 3);
  const Var r = recur::sigmoid(gx[0] + gh[0]), z = recur::sigmoid(gx[1] + gh[1]);
  const Var n = recur::tanh(gx[2] + r * gh[2]);
  return {n + z * (h - n)};
}

}  // namespace

ScanCellStep::ScanCellStep(CellForm form, const rnn::Config& config, recur::Capture capture)
    : form_(form), config_(config), capture_(capture) {
  // The suite's inputs and target (rnn_suite.hpp), as every side makes them.
  xs_ = uniform_tensor({config.steps, config.batch, config.input}, -1.f, 1.f, rnn::kSeed);
  target_ = uniform_tensor({config.steps, config.batch, config.hidden}, -1.f, 1.f, rnn::kSeed + 1);
  const float bound = rnn::init_bound(config);
  unsigned seed = rnn::kSeed + 2;
  for (const recur::Shape& shape : parameter_shapes(form, config))
    weights_.push_back(uniform_tensor(shape, -bound, bound, seed++));
}

double ScanCellStep::step(std::size_t* bytes_held, recur::StepCapture* capture) const {
  recur::Tape tape;
  std::vector<Var> weights;
  for (const recur::Tensor& w : weights_) weights.push_back(tape.variable(w));
  const Var zeros = tape.constant(recur::zeros({config_.batch, config_.hidden}));
  const bool lstm = form_ != CellForm::gru_merged;
  const recur::StepFn fn = form_ == CellForm::lstm_merged ? lstm_merged : lstm ? lstm_per_gate : gru_merged;
  std::vector<recur::OutputInfo> outputs{zeros};
  if (lstm) outputs.push_back(zeros);
  const recur::ScanResult r = recur::scan(
      fn, {.sequences = {tape.constant(xs_)}, .outputs_info = outputs, .non_sequences = weights, .capture = capture_});
  if (capture) *capture = r.capture;
  const Var loss = recur::mse(r[0], tape.constant(target_));
  if (bytes_held) *bytes_held = tape.bytes_held();
  tape.backward(loss);
  for (const Var& w : weights) benchmark::DoNotOptimize(w.grad().raw_data());
  benchmark::ClobberMemory();
  return loss.value().item();
}

}  // namespace bench
