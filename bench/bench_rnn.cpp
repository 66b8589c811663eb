// The RNN suite on recur's layers nn::RNN, LSTM and GRU (rnn_recur.hpp); the LibTorch side
// is torch_rnn.cpp.
#include "rnn_recur.hpp"

namespace {

void run(benchmark::State& state, bench::rnn::Cell cell, const bench::rnn::Config& config) {
  const bench::RecurRnnStep model(cell, config);
  double loss = 0;
  for (auto _ : state) loss = model.step();
  bench::rnn::report_step(state, cell, config, loss);
}

[[maybe_unused]] const bool registered = (bench::rnn::register_suite("recur", run), true);

}  // namespace
