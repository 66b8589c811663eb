#pragma once
// The oneDNN side of the RNN suite (rnn_suite.hpp): oneDNN's RNN primitives (vanilla_rnn
// with tanh, lstm, and lbr_gru, which is PyTorch's GRU), forward training and backward,
// float32. The weights live in PyTorch's layout, as a training loop's parameters would;
// every training step reorders them into the layouts oneDNN's primitives chose (and the
// GRU's gates from PyTorch's r, z, n into oneDNN's u, r, o) and reorders the gradients
// back. Shared by recur_bench_onednn (time) and recur_lstm_memory_onednn (memory).
#include <cstddef>
#include <unordered_map>
#include <vector>

#include <dnnl.hpp>

#include "rnn_suite.hpp"

namespace bench {

class OnednnRnnStep {
 public:
  // Throws std::invalid_argument unless the chunks split the sequence evenly (every
  // configuration of the suite does): one pair of primitives serves every chunk.
  OnednnRnnStep(rnn::Cell cell, const rnn::Config& config);
  // One training step (chunk by chunk, the state carried between chunks without gradient);
  // returns the mean of the chunks' losses. gradients() holds the step's gradients.
  double step();
  // The gradients of the last step in PyTorch's layout, in the order of rnn::param_specs.
  const std::vector<std::vector<float>>& gradients() const { return grads_; }
  // What oneDNN keeps for backward: the forward's workspace, and the weights and bias in
  // the layouts of the forward primitive.
  std::size_t workspace_bytes() const;
  std::size_t weight_bytes() const;

 private:
  void make_primitives();
  // Makes the forward training and backward primitives of one cell kind.
  template <class Forward, class Backward>
  void use(const typename Forward::desc& forward, const typename Backward::desc& backward);
  void make_memories();
  void make_weight_memories();
  // A buffer oneDNN allocates, zeroed.
  dnnl::memory owned(const dnnl::memory::desc& md) const;
  void weights_to_onednn();
  void gradients_to_pytorch();
  // The chunk's mean squared error; writes its gradient to diff_dst_layer_.
  double loss_and_gradient(std::int64_t start);

  rnn::Cell cell_;
  rnn::Config config_;
  dnnl::engine engine_;
  dnnl::stream stream_;
  std::vector<float> xs_, target_;                  // [T, B, I], [T, B, H]
  std::vector<std::vector<float>> params_, grads_;  // weight_ih, weight_hh, bias_ih, bias_hh

  // A reorder primitive with its source and destination.
  struct Reorder {
    dnnl::reorder primitive;
    dnnl::memory from, to;
  };
  using Args = std::unordered_map<int, dnnl::memory>;

  dnnl::rnn_primitive_desc_base forward_pd_, backward_pd_;
  dnnl::primitive forward_, backward_;
  Args forward_args_, backward_args_;
  // PyTorch's weights into the forward's (and, when it differs, the backward's) layouts, and
  // the diff weights, accumulated over the chunks of a step, back into PyTorch's.
  std::vector<Reorder> weights_to_onednn_, gradients_to_pytorch_;
  // The GRU's weights and gradients with the gates in oneDNN's order (empty otherwise).
  std::vector<float> weights_layer_staging_, weights_iter_staging_;
  dnnl::memory bias_, diff_bias_;  // plain ldgo, from and to PyTorch's two biases
  dnnl::memory src_layer_, dst_layer_, diff_dst_layer_;
  // The state (h and, for the LSTM, c) into a chunk and out of it.
  dnnl::memory src_iter_, src_iter_c_, dst_iter_, dst_iter_c_;
};

}  // namespace bench
