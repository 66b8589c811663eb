#pragma once
// The LibTorch side of lstm_recur.hpp: the same cell in a manual loop with autograd (the
// way LibTorch runs a custom recurrence), loss = mean of every step's h, gradients to
// Wx, Wh and b. Shared by recur_bench_torch (time) and recur_lstm_memory_torch (memory).
#include "torch_side.hpp"

namespace bench {

class TorchLstm {
 public:
  TorchLstm();
  void step() const;  // one training step; the leaves' gradients are dropped after it

 private:
  torch::Tensor xs_, wx_, wh_, b_, h0_, c0_;
};

}  // namespace bench
