// recur_lstm_memory_onednn lstm_full_bptt: one training step of the RNN suite's LSTM on
// oneDNN's primitives (rnn_onednn.hpp) at the memory shapes, full BPTT, then the process's
// peak resident set and, as the bytes held for backward, the forward's workspace plus the
// weights in oneDNN's layouts (memory_main.hpp).
#include <cstdio>

#include "memory_main.hpp"
#include "onednn_side.hpp"
#include "rnn_onednn.hpp"

int main(int argc, char** argv) {
  bench::use_bench_threads();
  return bench::memory_main(argc, argv, "onednn",
                            {{"lstm_full_bptt", []() -> std::optional<std::size_t> {
                                bench::OnednnRnnStep model(bench::rnn::Cell::lstm, bench::rnn::kMemoryConfig);
                                model.step();
                                std::fprintf(stderr, "oneDNN LSTM: workspace %zu bytes, weights and bias %zu bytes\n",
                                             model.workspace_bytes(), model.weight_bytes());
                                return model.workspace_bytes() + model.weight_bytes();
                              }}});
}
