// scan_cell/<form>/<config>/<path>: the hand-written cells of scan_cells.hpp, one training
// step each, with the step recorded at every call (path "recorded", Capture::off) and
// captured ("captured"). The fused layers on the same shapes are rnn/lstm|gru/<config>/recur
// (bench_rnn.cpp); run both in one filter to quote ratios from one run.
#include "scan_cells.hpp"

namespace {

void run(benchmark::State& state, bench::CellForm form, const bench::rnn::Config& config, recur::Capture capture) {
  const bench::ScanCellStep model(form, config, capture);
  double loss = 0;
  recur::StepCapture path;
  for (auto _ : state) loss = model.step(nullptr, &path);
  bench::report_per_op(state, 1);
  state.counters["loss"] = loss;
  state.counters["captured"] = path.captured ? 1 : 0;
  state.counters["merged"] = path.merged_products;
  state.counters["pushed_out"] = path.pushed_out_ops;
  state.counters["batched_dw"] = path.batched_weight_grads;
}

[[maybe_unused]] const bool registered = [] {
  for (const bench::CellForm form :
       {bench::CellForm::lstm_merged, bench::CellForm::lstm_per_gate, bench::CellForm::gru_merged})
    for (const bench::rnn::Config& config : bench::rnn::kConfigs) {
      if (config.chunk < config.steps) continue;  // TBPTT is the layers' suite
      for (const auto& [path, capture] : {std::pair{"recorded", recur::Capture::off},
                                          std::pair{"captured", recur::Capture::automatic}})
        benchmark::RegisterBenchmark(
            (std::string("scan_cell/") + bench::form_name(form) + "/" + config.name + "/" + path).c_str(),
            [=](benchmark::State& state) { run(state, form, config, capture); })
            ->UseRealTime()
            ->MinTime(0.2)
            ->Unit(benchmark::kMillisecond);
    }
  return true;
}();

}  // namespace
