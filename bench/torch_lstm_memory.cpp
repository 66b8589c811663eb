// recur_lstm_memory_torch full_tape: one training step of the LibTorch LSTM loop of
// lstm_torch.hpp, then the process's peak resident set (memory_main.hpp).
#include "lstm_torch.hpp"
#include "memory_main.hpp"

int main(int argc, char** argv) {
  bench::use_bench_threads();
  return bench::memory_main(argc, argv, "libtorch",
                            {{"full_tape", []() -> std::optional<std::size_t> {
                                const bench::TorchLstm model;
                                model.step();
                                return std::nullopt;  // LibTorch does not tell
                              }}});
}
