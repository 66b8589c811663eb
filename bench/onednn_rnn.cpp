// The oneDNN side of bench_rnn.cpp: the RNN suite on oneDNN's RNN primitives, with the
// GRU (rnn_onednn.hpp).
#include "rnn_onednn.hpp"

namespace {

void run(benchmark::State& state, bench::rnn::Cell cell, const bench::rnn::Config& config) {
  bench::OnednnRnnStep model(cell, config);
  double loss = 0;
  for (auto _ : state) loss = model.step();
  bench::rnn::report_step(state, cell, config, loss);
}

using bench::rnn::Cell;
[[maybe_unused]] const bool registered =
    (bench::rnn::register_suite("onednn", run, {Cell::rnn, Cell::lstm, Cell::gru}), true);

}  // namespace
