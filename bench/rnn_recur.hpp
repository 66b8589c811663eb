#pragma once
// The recur side of the RNN suite (rnn_suite.hpp): recur's layers nn::RNN, LSTM and GRU
// (ops/nn/recurrent.hpp), with the suite's weights. Full BPTT runs on one tape; TBPTT runs
// through nn::TruncatedBptt, which starts each chunk from the carried state as constants on
// a new tape. Shared by recur_bench (time) and recur_lstm_memory (memory).
#include <cstddef>
#include <functional>

#include "recur_side.hpp"
#include "rnn_suite.hpp"

namespace bench {

class RecurRnnStep {
 public:
  RecurRnnStep(rnn::Cell cell, const rnn::Config& config);
  // One training step; returns the mean of the chunks' losses. The weights' gradients are
  // dropped after it. With `bytes_held` (full BPTT), stores Tape::bytes_held() measured
  // right before backward.
  double step(std::size_t* bytes_held = nullptr) const;

 private:
  // The layer's call: (input, h0, c0); c0 is ignored by the RNN and the GRU.
  using Layer = std::function<recur::nn::RecurrentOutput(const recur::Var&, const recur::Var&, const recur::Var&)>;
  double full_bptt(std::size_t* bytes_held) const;
  double truncated() const;
  void drop_grads() const;

  rnn::Cell cell_;
  rnn::Config config_;
  recur::Tensor xs_, target_;
  recur::Module parameters_;  // the layer's, shared with layer_
  Layer layer_;
};

}  // namespace bench
