#include "rnn_recur.hpp"

#include <span>
#include <vector>

#include <recur/ops/nn/recurrent.hpp>

namespace bench {

using recur::Tape;
using recur::Tensor;
using recur::Var;
using rnn::Cell;

RecurRnnStep::RecurRnnStep(Cell cell, const rnn::Config& config)
    : cell_(cell),
      config_(config),
      xs_(uniform_tensor({config.steps, config.batch, config.input}, -1.f, 1.f, rnn::kSeed)),
      target_(uniform_tensor({config.steps, config.batch, config.hidden}, -1.f, 1.f, rnn::kSeed + 1)) {
  recur::Generator gen(rnn::kSeed);
  const recur::nn::RecurrentOptions options{.input_size = config.input, .hidden_size = config.hidden};
  if (cell == Cell::lstm) {
    const recur::nn::LSTM layer(options, gen);
    parameters_ = layer;
    layer_ = layer;
  } else if (cell == Cell::gru) {
    const recur::nn::GRU layer(options, gen);
    parameters_ = layer;
    layer_ = [layer](const Var& input, const Var& h0, const Var&) { return layer(input, h0); };
  } else {
    const recur::nn::RNN layer(options, gen);
    parameters_ = layer;
    layer_ = [layer](const Var& input, const Var& h0, const Var&) { return layer(input, h0); };
  }
  // The suite's values, as on the LibTorch side.
  const float bound = rnn::init_bound(config);
  for (const rnn::ParamSpec& p : rnn::param_specs(cell, config))
    parameters_.parameter(p.name).assign(uniform_tensor(recur::Shape(p.shape.begin(), p.shape.end()), -bound, bound,
                                                        p.seed));
}

double RecurRnnStep::step(std::size_t* bytes_held) const {
  return config_.chunk < config_.steps ? truncated() : full_bptt(bytes_held);
}

double RecurRnnStep::full_bptt(std::size_t* bytes_held) const {
  Tape tape;
  const recur::nn::RecurrentOutput out = layer_(tape.constant(xs_), Var(), Var());
  const Var loss = recur::mse(out.output, tape.constant(target_));
  if (bytes_held) *bytes_held = tape.bytes_held();
  tape.backward(loss);
  const double value = loss.value().item();
  drop_grads();
  return value;
}

double RecurRnnStep::truncated() const {
  const Tensor zeros = recur::zeros({1, config_.batch, config_.hidden});
  std::vector<Tensor> initial{zeros};
  if (cell_ == Cell::lstm) initial.push_back(zeros);
  // One chunk: the sum of its per-step losses, which TruncatedBptt divides by the steps
  // counted, so each window's loss is the mean squared error over the chunk.
  auto chunk = [this](std::span<const Var> state, const Tensor& inputs, const Tensor& targets,
                      std::int64_t count_from) -> recur::nn::ChunkResult {
    const recur::nn::RecurrentOutput out = layer_(Var(inputs), state[0], state.size() > 1 ? state[1] : Var());
    const std::int64_t steps = inputs.size(0);
    const bool all = count_from == 0;  // always, as k1 = k2: no slice on the tape then
    const Var counted = all ? out.output : recur::slice(out.output, 0, count_from, steps);
    const Var loss = recur::mse(counted, Var(all ? targets : recur::slice(targets, 0, count_from, steps)));
    std::vector<Var> next{out.h_n};
    if (out.c_n.defined()) next.push_back(out.c_n);
    return {loss * static_cast<double>(steps - count_from), std::move(next)};
  };
  recur::nn::TruncatedBptt tbptt({.k1 = config_.chunk}, std::move(initial), chunk);
  double loss_sum = 0;
  std::int64_t windows = 0;
  const recur::nn::AfterBackward count = [&](const recur::nn::WindowReport& r) {
    loss_sum += r.loss;
    ++windows;
  };
  tbptt.feed(xs_, target_, count);
  tbptt.flush(count);
  drop_grads();
  return loss_sum / static_cast<double>(windows);
}

// Reads and drops the accumulated gradients, so every step starts alike.
void RecurRnnStep::drop_grads() const {
  for (const recur::Shared& p : parameters_.parameters()) benchmark::DoNotOptimize(p.grad().raw_data());
  benchmark::ClobberMemory();
  parameters_.zero_grad();
}

}  // namespace bench
