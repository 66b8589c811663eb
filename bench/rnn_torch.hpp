#pragma once
// The LibTorch side of the RNN suite (rnn_suite.hpp), in two variants: a manual loop of
// torch ops with autograd (two linear maps and the pointwise cell per step, how a custom
// recurrence is written in LibTorch) and torch::nn::RNN / LSTM / GRU. Shared by
// recur_bench_torch (time) and recur_lstm_memory_torch (memory).
#include <vector>

#include "rnn_suite.hpp"
#include "torch_side.hpp"

namespace bench {

class TorchRnnStep {
 public:
  enum class Variant { manual, nn };
  TorchRnnStep(rnn::Cell cell, const rnn::Config& config, Variant variant);
  // One training step (chunk by chunk, detaching the carried state between chunks);
  // returns the mean of the chunks' losses. The weights' gradients are dropped after it.
  double step();

 private:
  struct State {
    torch::Tensor h, c;  // c: LSTM only
  };
  // The outputs over xs [T, B, I] as [T, B, H]; `state` moves to the last step.
  torch::Tensor forward(const torch::Tensor& xs, State& state);
  torch::Tensor manual_loop(const torch::Tensor& xs, State& state) const;
  State initial_state() const;

  rnn::Cell cell_;
  rnn::Config config_;
  Variant variant_;
  torch::Tensor xs_, target_;
  std::vector<torch::Tensor> weights_;  // weight_ih, weight_hh, bias_ih, bias_hh (leaves)
  torch::nn::RNN rnn_{nullptr};
  torch::nn::LSTM lstm_{nullptr};
  torch::nn::GRU gru_{nullptr};
};

}  // namespace bench
