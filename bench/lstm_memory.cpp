// recur_lstm_memory full_tape|checkpoint_auto|layer_full_bptt|scan_cell_recorded|
// scan_cell_captured: one training step of the LSTM of lstm_recur.hpp with the full tape or
// with Checkpoint::auto_sqrt(), of the RNN suite's LSTM through the nn::LSTM layer at the
// memory shapes (rnn_recur.hpp, full BPTT), or of the hand-written LSTM cell of
// scan_cells.hpp on those shapes, recorded at every step or captured; then the process's peak resident set and the tape's bytes held for backward
// (memory_main.hpp).
#include "lstm_recur.hpp"
#include "memory_main.hpp"
#include "rnn_recur.hpp"
#include "scan_cells.hpp"

namespace {

bench::MemoryMode mode(std::string_view name, recur::Checkpoint checkpoint) {
  return {name, [checkpoint]() -> std::optional<std::size_t> {
            const bench::RecurLstm model;
            std::size_t held = 0;
            model.step(checkpoint, &held);
            return held;
          }};
}

bench::MemoryMode scan_cell(std::string_view name, recur::Capture capture) {
  return {name, [capture]() -> std::optional<std::size_t> {
            const bench::ScanCellStep model(bench::CellForm::lstm_merged, bench::rnn::kMemoryConfig, capture);
            std::size_t held = 0;
            model.step(&held);
            return held;
          }};
}

}  // namespace

int main(int argc, char** argv) {
  bench::use_bench_threads();
  return bench::memory_main(argc, argv, "recur",
                            {mode("full_tape", recur::Checkpoint::none()),
                             mode("checkpoint_auto", recur::Checkpoint::auto_sqrt()),
                             {"layer_full_bptt", []() -> std::optional<std::size_t> {
                                const bench::RecurRnnStep model(bench::rnn::Cell::lstm, bench::rnn::kMemoryConfig);
                                std::size_t held = 0;
                                model.step(&held);
                                return held;
                              }},
                             scan_cell("scan_cell_recorded", recur::Capture::off),
                             scan_cell("scan_cell_captured", recur::Capture::automatic)});
}
