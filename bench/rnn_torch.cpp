#include "rnn_torch.hpp"

#include <algorithm>

namespace bench {

namespace F = torch::nn::functional;
using rnn::Cell;

TorchRnnStep::TorchRnnStep(Cell cell, const rnn::Config& config, Variant variant)
    : cell_(cell),
      config_(config),
      variant_(variant),
      xs_(uniform_tensor({config.steps, config.batch, config.input}, -1.f, 1.f, rnn::kSeed)),
      target_(uniform_tensor({config.steps, config.batch, config.hidden}, -1.f, 1.f, rnn::kSeed + 1)) {
  const float bound = rnn::init_bound(config);
  if (variant == Variant::nn) {
    if (cell == Cell::lstm)
      lstm_ = torch::nn::LSTM(torch::nn::LSTMOptions(config.input, config.hidden));
    else if (cell == Cell::gru)
      gru_ = torch::nn::GRU(torch::nn::GRUOptions(config.input, config.hidden));
    else
      rnn_ = torch::nn::RNN(torch::nn::RNNOptions(config.input, config.hidden).nonlinearity(torch::kTanh));
  }
  // The module's parameters take the suite's values; the manual loop makes its own leaves.
  const torch::OrderedDict<std::string, torch::Tensor> module_params =
      variant != Variant::nn ? torch::OrderedDict<std::string, torch::Tensor>()
      : cell == Cell::lstm   ? lstm_->named_parameters()
      : cell == Cell::gru    ? gru_->named_parameters()
                             : rnn_->named_parameters();
  for (const rnn::ParamSpec& p : rnn::param_specs(cell, config)) {
    const torch::Tensor value = uniform_tensor(p.shape, -bound, bound, p.seed);
    if (variant == Variant::nn) {
      torch::Tensor param = module_params[p.name];
      const torch::NoGradGuard no_grad;
      param.copy_(value);
      weights_.push_back(param);
    } else {
      weights_.push_back(value.requires_grad_(true));
    }
  }
}

TorchRnnStep::State TorchRnnStep::initial_state() const {
  // torch::nn's layers take the state with a layer axis in front.
  std::vector<std::int64_t> shape{config_.batch, config_.hidden};
  if (variant_ == Variant::nn) shape.insert(shape.begin(), 1);
  State s{torch::zeros(shape), torch::Tensor()};
  if (cell_ == Cell::lstm) s.c = torch::zeros(shape);
  return s;
}

torch::Tensor TorchRnnStep::manual_loop(const torch::Tensor& xs, State& state) const {
  const torch::Tensor &w_ih = weights_[0], &w_hh = weights_[1], &b_ih = weights_[2], &b_hh = weights_[3];
  std::vector<torch::Tensor> hs;
  hs.reserve(static_cast<std::size_t>(xs.size(0)));
  torch::Tensor h = state.h, c = state.c;
  for (std::int64_t t = 0; t < xs.size(0); ++t) {
    if (cell_ == Cell::gru) {
      // PyTorch's gate order and form: reset, update, new; r scales h W_hn^T + b_hn.
      const std::vector<torch::Tensor> x = F::linear(xs[t], w_ih, b_ih).chunk(3, 1);
      const std::vector<torch::Tensor> p = F::linear(h, w_hh, b_hh).chunk(3, 1);
      const torch::Tensor r = torch::sigmoid(x[0] + p[0]), z = torch::sigmoid(x[1] + p[1]);
      const torch::Tensor n = torch::tanh(x[2] + r * p[2]);
      h = (1 - z) * n + z * h;
      hs.push_back(h);
      continue;
    }
    const torch::Tensor pre = F::linear(xs[t], w_ih, b_ih) + F::linear(h, w_hh, b_hh);
    if (cell_ == Cell::lstm) {
      // PyTorch's gate order: input, forget, cell, output
      const std::vector<torch::Tensor> g = pre.chunk(4, 1);
      c = torch::sigmoid(g[1]) * c + torch::sigmoid(g[0]) * torch::tanh(g[2]);
      h = torch::sigmoid(g[3]) * torch::tanh(c);
    } else {
      h = torch::tanh(pre);
    }
    hs.push_back(h);
  }
  state = {h, c};
  return torch::stack(hs);
}

torch::Tensor TorchRnnStep::forward(const torch::Tensor& xs, State& state) {
  if (variant_ == Variant::manual) return manual_loop(xs, state);
  if (cell_ == Cell::lstm) {
    auto [out, hc] = lstm_->forward(xs, std::make_tuple(state.h, state.c));
    state = {std::get<0>(hc), std::get<1>(hc)};
    return out;
  }
  if (cell_ == Cell::gru) {
    auto [out, h] = gru_->forward(xs, state.h);
    state = {h, torch::Tensor()};
    return out;
  }
  auto [out, h] = rnn_->forward(xs, state.h);
  state = {h, torch::Tensor()};
  return out;
}

double TorchRnnStep::step() {
  State state = initial_state();
  double loss_sum = 0;
  std::int64_t chunks = 0;
  for (std::int64_t start = 0; start < config_.steps; start += config_.chunk, ++chunks) {
    const std::int64_t len = std::min(config_.chunk, config_.steps - start);
    const torch::Tensor out = forward(xs_.narrow(0, start, len), state);
    const torch::Tensor loss = F::mse_loss(out, target_.narrow(0, start, len));
    loss.backward();
    loss_sum += loss.item<double>();
    // The next chunk starts from this state as a constant (truncation).
    state = {state.h.detach(), state.c.defined() ? state.c.detach() : torch::Tensor()};
  }
  for (const torch::Tensor& w : weights_) take_grad(w);
  return loss_sum / static_cast<double>(chunks);
}

}  // namespace bench
