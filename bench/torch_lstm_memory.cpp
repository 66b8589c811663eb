// recur_lstm_memory_torch full_tape|manual_loop|nn_lstm: one training step of the LibTorch
// LSTM loop of lstm_torch.hpp (full_tape), or of the RNN suite's LSTM (rnn_torch.hpp) at
// the memory shapes as a manual loop or torch::nn::LSTM, then the process's peak resident
// set (memory_main.hpp).
#include "lstm_torch.hpp"
#include "memory_main.hpp"
#include "rnn_torch.hpp"

namespace {

bench::MemoryMode suite_mode(std::string_view name, bench::TorchRnnStep::Variant variant) {
  return {name, [variant]() -> std::optional<std::size_t> {
            bench::TorchRnnStep model(bench::rnn::Cell::lstm, bench::rnn::kMemoryConfig, variant);
            model.step();
            return std::nullopt;  // LibTorch does not tell
          }};
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_bench_threads();
  return bench::memory_main(argc, argv, "libtorch",
                            {{"full_tape",
                              []() -> std::optional<std::size_t> {
                                const bench::TorchLstm model;
                                model.step();
                                return std::nullopt;
                              }},
                             suite_mode("manual_loop", bench::TorchRnnStep::Variant::manual),
                             suite_mode("nn_lstm", bench::TorchRnnStep::Variant::nn)});
}
