// The cells' elementwise kernels compiled for AVX2 and AVX-512 against the portable ones
// (ops/kernels/cell_kernel_choice_detail.hpp), in the same run: one LSTM step's elementwise
// forward and backward over the L configuration's rows (B64 H1024, what runs between the
// per-step products), and whole LSTM and GRU training steps of the RNN suite's M
// configuration with two tables, paired (bench::paired_ratio: first time / second time).
// Without a table on this build or CPU its benchmarks report an error.
#include <vector>

#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>

#include "rnn_recur.hpp"

namespace {

using recur::nn::detail::KernelIsa;
using recur::nn::detail::KernelTable;
using recur::nn::detail::kernels_for;
using recur::nn::detail::ScopedKernelIsa;

// One LSTM step's elementwise work on B rows of H units: forward (gates to h and c), then
// backward from a gradient of h (gates to their gradients).
class LstmRows {
 public:
  static constexpr std::int64_t kBatch = 64, kHidden = 1024;
  LstmRows()
      : pre_(bench::uniform_tensor({kBatch, 4 * kHidden}, -3.f, 3.f, 1)),
        c_prev_(bench::uniform_tensor({kBatch, kHidden}, -1.f, 1.f, 2)),
        dh_(bench::uniform_tensor({kBatch, kHidden}, -1.f, 1.f, 3)),
        act_(static_cast<std::size_t>(kBatch * 4 * kHidden)),
        c_(static_cast<std::size_t>(kBatch * kHidden)),
        h_(c_.size()),
        dc_(c_.size()),
        scratch_(static_cast<std::size_t>(kHidden)) {}

  void run(const KernelTable<float>& k) {
    const std::int64_t n = kHidden, gh = 4 * n;
    const float *pre = pre_.data<float>(), *c_prev = c_prev_.data<float>(), *dh = dh_.data<float>();
    for (std::int64_t b = 0; b < kBatch; ++b)
      k.lstm.forward(pre + b * gh, act_.data() + b * gh, c_prev + b * n, c_.data() + b * n, h_.data() + b * n,
                     scratch_.data(), n);
    for (std::int64_t b = 0; b < kBatch; ++b)
      k.lstm.backward(act_.data() + b * gh, c_prev + b * n, c_.data() + b * n, dh + b * n, dc_.data() + b * n,
                      scratch_.data(), n);
    benchmark::DoNotOptimize(act_.data());
    benchmark::ClobberMemory();
  }

 private:
  recur::Tensor pre_, c_prev_, dh_;
  std::vector<float> act_, c_, h_, dc_, scratch_;
};

void lstm_rows(benchmark::State& state, KernelIsa isa) {
  const KernelTable<float>* table = kernels_for<float>(isa);
  if (!table) return state.SkipWithError("no such kernel table on this build or CPU");
  LstmRows rows;
  for (auto _ : state) rows.run(*table);
}

// A layer's training step at M on table `a` and on table `b`, paired (ratio b / a).
void layer_paired(benchmark::State& state, bench::rnn::Cell cell, KernelIsa a, KernelIsa b) {
  if (!kernels_for<float>(a) || !kernels_for<float>(b))
    return state.SkipWithError("no such kernel table on this build or CPU");
  const bench::RecurRnnStep model(cell, bench::rnn::kConfigs[1]);  // M
  auto on = [&](KernelIsa isa) {
    return [&model, isa] {
      const ScopedKernelIsa use(isa);
      model.step();
    };
  };
  bench::paired_ratio(state, on(a), on(b));
}

BENCHMARK_CAPTURE(lstm_rows, portable, KernelIsa::portable)
    ->Name("cell_kernels/lstm_step_B64_H1024/portable")->UseRealTime();
BENCHMARK_CAPTURE(lstm_rows, avx2, KernelIsa::avx2)->Name("cell_kernels/lstm_step_B64_H1024/avx2")->UseRealTime();
BENCHMARK_CAPTURE(lstm_rows, avx512, KernelIsa::avx512)
    ->Name("cell_kernels/lstm_step_B64_H1024/avx512")->UseRealTime();
BENCHMARK_CAPTURE(layer_paired, lstm, bench::rnn::Cell::lstm, KernelIsa::portable, KernelIsa::avx2)
    ->Name("cell_kernels/lstm_M_paired_portable_with_avx2")->UseRealTime();
BENCHMARK_CAPTURE(layer_paired, gru, bench::rnn::Cell::gru, KernelIsa::portable, KernelIsa::avx2)
    ->Name("cell_kernels/gru_M_paired_portable_with_avx2")->UseRealTime();
BENCHMARK_CAPTURE(layer_paired, lstm, bench::rnn::Cell::lstm, KernelIsa::avx2, KernelIsa::avx512)
    ->Name("cell_kernels/lstm_M_paired_avx2_with_avx512")->UseRealTime();
BENCHMARK_CAPTURE(layer_paired, gru, bench::rnn::Cell::gru, KernelIsa::avx2, KernelIsa::avx512)
    ->Name("cell_kernels/gru_M_paired_avx2_with_avx512")->UseRealTime();

}  // namespace
