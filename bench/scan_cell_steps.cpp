// recur_scan_cell_steps: training steps of one cell of scan_cells.hpp run back to back, for
// a profiler or an instruction counter (valgrind --tool=callgrind) rather than for a
// benchmark's statistics: one untimed step, then --rounds rounds of --steps steps each, and
// the best round's time per step. recur_bench's scan_cell/* rows time the same steps.
// --length, --batch and --hidden change the config's shape (a short loop's costs,
// docs/performance.md); --layer times the fused layer (nn::LSTM, nn::GRU) on that shape instead.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "rnn_recur.hpp"
#include "scan_cells.hpp"

int main(int argc, char** argv) {
  std::string form_name = "lstm", config_name = "S";
  int steps = 200, rounds = 5;
  bool recorded = false, layer = false;
  std::int64_t length = 0, batch = 0, hidden = 0;
  CLI::App app("Training steps of a cell written in scan (bench/scan_cells.hpp)", "recur_scan_cell_steps");
  app.add_option("--cell", form_name, "lstm, lstm_per_gate or gru")
      ->check(CLI::IsMember({"lstm", "lstm_per_gate", "gru"}));
  app.add_option("--config", config_name, "S, M, L or TBPTT (rnn_suite.hpp)")
      ->check(CLI::IsMember({"S", "M", "L", "TBPTT"}));
  app.add_option("--steps", steps, "training steps per round")->check(CLI::PositiveNumber);
  app.add_option("--rounds", rounds, "rounds; the best one is reported")->check(CLI::PositiveNumber);
  app.add_flag("--recorded", recorded, "record every step (Capture::off) instead of capturing it");
  app.add_flag("--layer", layer, "the fused layer (nn::LSTM or nn::GRU) on the same shape instead of the cell")
      ->excludes("--recorded");
  app.add_option("--length", length, "steps of the sequence, one backward over all (default: the config's)")
      ->check(CLI::PositiveNumber);
  app.add_option("--batch", batch, "batch (default: the config's)")->check(CLI::PositiveNumber);
  app.add_option("--hidden", hidden, "hidden size (default: the config's)")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  const bench::CellForm form = form_name == "lstm"            ? bench::CellForm::lstm_merged
                               : form_name == "lstm_per_gate" ? bench::CellForm::lstm_per_gate
                                                              : bench::CellForm::gru_merged;
  const auto& configs = bench::rnn::kConfigs;
  const auto* config = std::find_if(std::begin(configs), std::end(configs),
                                    [&](const bench::rnn::Config& c) { return config_name == c.name; });
  bench::use_bench_threads();
  bench::rnn::Config shape = *config;
  if (length > 0) shape.steps = shape.chunk = length;
  if (batch > 0) shape.batch = batch;
  if (hidden > 0) shape.hidden = hidden;
  std::optional<bench::ScanCellStep> cell;
  std::optional<bench::RecurRnnStep> fused;
  if (layer) fused.emplace(form == bench::CellForm::gru_merged ? bench::rnn::Cell::gru : bench::rnn::Cell::lstm, shape);
  else cell.emplace(form, shape, recorded ? recur::Capture::off : recur::Capture::automatic);
  auto step = [&] { return fused ? fused->step() : cell->step(); };
  double loss = step();
  double best = 0;
  for (int r = 0; r < rounds; ++r) {
    const auto start = std::chrono::steady_clock::now();
    for (int i = 0; i < steps; ++i) loss = step();
    const double each = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() / steps;
    best = r == 0 ? each : std::min(best, each);
  }
  const char* path = layer ? "fused layer" : recorded ? "recorded" : "captured";
  std::printf("%s %s %s: %.4f ms per training step (best of %d rounds of %d), loss %.6f\n", form_name.c_str(),
              config_name.c_str(), path, best * 1e3, rounds, steps, loss);
}
