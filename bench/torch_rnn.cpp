// The LibTorch side of bench_rnn.cpp: the RNN suite as a manual loop with autograd and as
// torch::nn::RNN / LSTM / GRU (rnn_torch.hpp).
#include "rnn_torch.hpp"

namespace {

using bench::TorchRnnStep;

void run(benchmark::State& state, bench::rnn::Cell cell, const bench::rnn::Config& config,
         TorchRnnStep::Variant variant) {
  TorchRnnStep model(cell, config, variant);
  double loss = 0;
  for (auto _ : state) loss = model.step();
  bench::rnn::report_step(state, cell, config, loss);
}

[[maybe_unused]] const bool registered = [] {
  bench::rnn::register_suite("manual", [](benchmark::State& state, bench::rnn::Cell cell,
                                          const bench::rnn::Config& config) {
    run(state, cell, config, TorchRnnStep::Variant::manual);
  });
  bench::rnn::register_suite("nn", [](benchmark::State& state, bench::rnn::Cell cell,
                                      const bench::rnn::Config& config) {
    run(state, cell, config, TorchRnnStep::Variant::nn);
  });
  return true;
}();

}  // namespace
