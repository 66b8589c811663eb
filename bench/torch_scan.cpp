// The LibTorch side of bench_scan.cpp. LibTorch has no scan: its way to run a recurrence
// is the loop itself, so scan/tanh_step here is the loop with autograd (compare it with
// recur's scan), and lstm/full_tape is the LSTM step of lstm_torch.hpp.
#include <vector>

#include "lstm_torch.hpp"
#include "torch_side.hpp"

namespace {

void tanh_loop(benchmark::State& state) {
  const torch::Tensor xs = bench::uniform_tensor({bench::kScanSteps, bench::kRows, bench::kCols}, -1.f, 1.f, 1)
                               .requires_grad_(true);
  const torch::Tensor h0 = bench::uniform_tensor({bench::kRows, bench::kCols}, -1.f, 1.f, 2).requires_grad_(true);
  for (auto _ : state) {
    std::vector<torch::Tensor> hs;
    hs.reserve(bench::kScanSteps);
    torch::Tensor h = h0;
    for (std::int64_t t = 0; t < bench::kScanSteps; ++t) {
      h = torch::tanh(h + xs[t]);
      hs.push_back(h);
    }
    torch::stack(hs).sum().backward();
    bench::take_grad(xs);
    bench::take_grad(h0);
  }
  bench::report_per_op(state, bench::kScanSteps);
}

void lstm(benchmark::State& state) {
  const bench::TorchLstm model;
  for (auto _ : state) model.step();
  bench::report_per_op(state, 1);
}

BENCHMARK(tanh_loop)->Name("scan/tanh_step")->UseRealTime();
BENCHMARK(lstm)->Name("lstm/full_tape")->UseRealTime()->Unit(benchmark::kMillisecond);

}  // namespace
