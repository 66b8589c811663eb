// The LibTorch side of bench_matmul.cpp.
#include "bare_sgemm.hpp"
#include "torch_side.hpp"

namespace {

torch::Tensor matrix(std::int64_t rows, std::int64_t cols, unsigned seed) {
  return bench::uniform_tensor({rows, cols}, -1.f, 1.f, seed);
}

// One training-step-like matmul: forward, backward with a given grad_output, leaves'
// gradients read and dropped so that every run starts alike.
class TorchMatmul {
 public:
  TorchMatmul()
      : a_(matrix(bench::kM, bench::kK, 1).requires_grad_(true)),
        b_(matrix(bench::kK, bench::kN, 2).requires_grad_(true)),
        g_(matrix(bench::kM, bench::kN, 3)) {}

  void run() const {
    torch::matmul(a_, b_).backward(g_);
    benchmark::DoNotOptimize(a_.grad().data_ptr());
    benchmark::DoNotOptimize(b_.grad().data_ptr());
    benchmark::ClobberMemory();
    a_.mutable_grad().reset();
    b_.mutable_grad().reset();
  }

 private:
  torch::Tensor a_, b_, g_;
};

void matmul_fwd_bwd(benchmark::State& state) {
  const TorchMatmul step;
  for (auto _ : state) step.run();
  bench::report_per_op(state, 1);
  bench::report_matmul_flops(state);
}

void matmul_vs_bare(benchmark::State& state) {
  const TorchMatmul step;
  bench::paired_with_bare(state, [&] { step.run(); });
}

BENCHMARK(matmul_fwd_bwd)->Name("matmul/fwd_bwd")->UseRealTime();
BENCHMARK(matmul_vs_bare)->Name("matmul/paired_with_bare")->UseRealTime();

}  // namespace
