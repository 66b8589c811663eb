#include "lstm_torch.hpp"

#include <vector>

namespace bench {

TorchLstm::TorchLstm()
    : xs_(uniform_tensor({kLstmSteps, kBatch, kInput}, -1.f, 1.f, kLstmSeed)),
      wx_(uniform_tensor({kInput, 4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 1).requires_grad_(true)),
      wh_(uniform_tensor({kHidden, 4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 2).requires_grad_(true)),
      b_(uniform_tensor({4 * kHidden}, -kLstmInit, kLstmInit, kLstmSeed + 3).requires_grad_(true)),
      h0_(torch::zeros({kBatch, kHidden})),
      c0_(torch::zeros({kBatch, kHidden})) {}

void TorchLstm::step() const {
  torch::Tensor h = h0_, c = c0_;
  std::vector<torch::Tensor> hs;
  hs.reserve(kLstmSteps);
  for (std::int64_t t = 0; t < kLstmSteps; ++t) {
    // gates in the order i, f, g, o, as on the recur side
    const std::vector<torch::Tensor> gates = (torch::matmul(xs_[t], wx_) + torch::matmul(h, wh_) + b_).chunk(4, 1);
    c = torch::sigmoid(gates[1]) * c + torch::sigmoid(gates[0]) * torch::tanh(gates[2]);
    h = torch::sigmoid(gates[3]) * torch::tanh(c);
    hs.push_back(h);
  }
  torch::stack(hs).mean().backward();
  take_grad(wx_);
  take_grad(wh_);
  take_grad(b_);
}

}  // namespace bench
