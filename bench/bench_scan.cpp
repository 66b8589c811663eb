// scan on recur's tape. Overhead: h = tanh(h + x_t) on [1, 32] float32 over kScanSteps
// steps, forward + backward (gradients to xs and h0), through scan against the same ops
// recorded by a plain loop; times are per step. Recomputation: the LSTM step of
// lstm_recur.hpp with the full tape and with Checkpoint::auto_sqrt(); times are per
// training step (its memory is measured by recur_lstm_memory, one process per mode).
// The paired_* benchmarks give the ratios of the checks (see bench::paired_ratio).
#include <span>
#include <vector>

#include "lstm_recur.hpp"
#include "recur_side.hpp"

namespace {

using recur::Tape;
using recur::Tensor;
using recur::Var;

class TanhSteps {
 public:
  // Theano's face: the step gets (x_t, h_prev).
  void scan() const {
    Tape tape;
    const Var xs = tape.variable(xs_), h0 = tape.variable(h0_);
    const auto step = [](std::span<const Var> a) -> recur::StepResult { return recur::tanh(a[1] + a[0]); };
    const recur::ScanResult r = recur::scan(step, {.sequences = {xs}, .outputs_info = {h0}});
    finish(tape, r[0], xs, h0);
  }

  // The same ops without scan: index, add, tanh per step, then stack.
  void unrolled() const {
    Tape tape;
    const Var xs = tape.variable(xs_), h0 = tape.variable(h0_);
    std::vector<Var> hs;
    hs.reserve(bench::kScanSteps);
    Var h = h0;
    for (std::int64_t t = 0; t < bench::kScanSteps; ++t) {
      h = recur::tanh(h + recur::index(xs, 0, t));
      hs.push_back(h);
    }
    finish(tape, recur::stack(std::span<const Var>(hs)), xs, h0);
  }

 private:
  static void finish(Tape& tape, const Var& hs, const Var& xs, const Var& h0) {
    tape.backward(recur::sum(hs));
    benchmark::DoNotOptimize(xs.grad().raw_data());
    benchmark::DoNotOptimize(h0.grad().raw_data());
    benchmark::ClobberMemory();
  }

  Tensor xs_ = bench::uniform_tensor({bench::kScanSteps, bench::kRows, bench::kCols}, -1.f, 1.f, 1);
  Tensor h0_ = bench::uniform_tensor({bench::kRows, bench::kCols}, -1.f, 1.f, 2);
};

void tanh_scan(benchmark::State& state) {
  const TanhSteps steps;
  for (auto _ : state) steps.scan();
  bench::report_per_op(state, bench::kScanSteps);
}

void tanh_unrolled(benchmark::State& state) {
  const TanhSteps steps;
  for (auto _ : state) steps.unrolled();
  bench::report_per_op(state, bench::kScanSteps);
}

// scan / unrolled, back to back (see bench::paired_ratio).
void tanh_scan_vs_unrolled(benchmark::State& state) {
  const TanhSteps steps;
  bench::paired_ratio(state, [&] { steps.scan(); }, [&] { steps.unrolled(); });
}

void lstm(benchmark::State& state, recur::Checkpoint checkpoint) {
  const bench::RecurLstm model;
  for (auto _ : state) model.step(checkpoint);
  bench::report_per_op(state, 1);
}

// checkpoint_auto / full_tape, back to back; two iterations, so that each goes first once
// (the one that runs second finds the buffers of the first in recur's pool).
void lstm_checkpoint_vs_full(benchmark::State& state) {
  const bench::RecurLstm model;
  bench::paired_ratio(state, [&] { model.step(recur::Checkpoint::auto_sqrt()); },
                      [&] { model.step(recur::Checkpoint::none()); });
}

BENCHMARK(tanh_scan)->Name("scan/tanh_step")->UseRealTime();
BENCHMARK(tanh_unrolled)->Name("scan/tanh_step_unrolled")->UseRealTime();
BENCHMARK(tanh_scan_vs_unrolled)->Name("scan/paired_with_unrolled")->UseRealTime();
BENCHMARK_CAPTURE(lstm, full, recur::Checkpoint::none())
    ->Name("lstm/full_tape")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(lstm, checkpoint, recur::Checkpoint::auto_sqrt())
    ->Name("lstm/checkpoint_auto")->UseRealTime()->Unit(benchmark::kMillisecond);
BENCHMARK(lstm_checkpoint_vs_full)->Name("lstm/paired_checkpoint_with_full")->UseRealTime()->Iterations(2)
    ->Unit(benchmark::kMillisecond);

}  // namespace
