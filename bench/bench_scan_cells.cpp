// scan_cell/<form>/<config>/<path>: the hand-written cells of scan_cells.hpp, one training
// step each, with the step recorded at every call (path "recorded", Capture::off) and
// captured ("captured"). The fused layers on the same shapes are rnn/lstm|gru/<config>/recur
// (bench_rnn.cpp). On a machine whose speed drifts, the paired runs give the ratios
// (bench::paired_ratio, the median of back-to-back pairs): "captured_over_layer" (the
// captured cell's time over nn::LSTM's or nn::GRU's), "captured_over_recorded", and
// "fused_over_captured" (the captured step with its elementwise chains fused, the default,
// over without) and "merged_over_captured" (with a value's products merged, the default,
// over without).
#include <recur/ops/scan/step_rewrite_detail.hpp>

#include "rnn_recur.hpp"
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

namespace engine = recur::scan_engine::detail;

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
  for (const bench::CellForm form :
       {bench::CellForm::lstm_merged, bench::CellForm::lstm_per_gate, bench::CellForm::gru_merged})
    for (const bench::rnn::Config& config : bench::rnn::kConfigs) {
      if (config.chunk < config.steps) continue;
      const std::string name = std::string("scan_cell/") + bench::form_name(form) + "/" + config.name;
      const auto cell = form == bench::CellForm::gru_merged ? bench::rnn::Cell::gru : bench::rnn::Cell::lstm;
      benchmark::RegisterBenchmark((name + "/captured_over_layer").c_str(), [=](benchmark::State& state) {
        const bench::ScanCellStep captured(form, config, recur::Capture::automatic);
        const bench::RecurRnnStep layer(cell, config);
        bench::paired_ratio(state, [&] { captured.step(); }, [&] { layer.step(); });
      })->UseRealTime()->Iterations(config.name[0] == 'L' ? 6 : 20)->Unit(benchmark::kMillisecond);
      benchmark::RegisterBenchmark((name + "/captured_over_recorded").c_str(), [=](benchmark::State& state) {
        const bench::ScanCellStep captured(form, config, recur::Capture::automatic);
        const bench::ScanCellStep recorded(form, config, recur::Capture::off);
        bench::paired_ratio(state, [&] { captured.step(); }, [&] { recorded.step(); });
      })->UseRealTime()->Iterations(config.name[0] == 'L' ? 6 : 20)->Unit(benchmark::kMillisecond);
      // The captured step with one rewrite switched to `on`, over the same with it switched off.
      auto switched = [=](const char* what, engine::RewriteSwitches on, engine::RewriteSwitches off) {
        benchmark::RegisterBenchmark((name + "/" + what).c_str(), [=](benchmark::State& state) {
          const bench::ScanCellStep captured(form, config, recur::Capture::automatic);
          auto with = [&](engine::RewriteSwitches s) {
            engine::set_rewrite_switches(s);
            captured.step();
          };
          bench::paired_ratio(state, [&] { with(on); }, [&] { with(off); });
          engine::set_rewrite_switches({});
        })->UseRealTime()->Iterations(config.name[0] == 'L' ? 6 : 20)->Unit(benchmark::kMillisecond);
      };
      switched("fused_over_captured", {.merge_products = false, .fuse_elementwise = true},
               {.merge_products = false, .fuse_elementwise = false});
      switched("merged_over_captured", {.merge_products = true, .fuse_elementwise = true},
               {.merge_products = false, .fuse_elementwise = true});
    }
  return true;
}();

}  // namespace
