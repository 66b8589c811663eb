// The LibTorch side of bench_overhead.cpp: the same chains on torch::Tensor with
// requires_grad, backward through .backward(). LibTorch frees the graph after backward,
// as recur frees a tape; the leaves' .grad is reset so every iteration starts alike.
#include "torch_side.hpp"

namespace {

using bench::take_grad;

torch::Tensor variable(float lo, float hi, unsigned seed) {
  return bench::uniform_tensor({bench::kRows, bench::kCols}, lo, hi, seed).requires_grad_(true);
}

void tanh_chain(benchmark::State& state) {
  const torch::Tensor x = variable(-1.f, 1.f, 1);
  const torch::Tensor seed = torch::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int i = 0; i < bench::kChain; ++i) y = torch::tanh(y);
    y.backward(seed);
    take_grad(x);
  }
  bench::report_per_op(state, bench::kChain);
}

void muladd_chain(benchmark::State& state) {
  const torch::Tensor x = variable(-1.f, 1.f, 1), w = variable(0.9f, 1.1f, 2), b = variable(-0.1f, 0.1f, 3);
  const torch::Tensor seed = torch::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    torch::Tensor y = x;
    for (int i = 0; i < bench::kChain / 2; ++i) y = y * w + b;
    y.backward(seed);
    take_grad(x);
    take_grad(w);
    take_grad(b);
  }
  bench::report_per_op(state, bench::kChain);
}

void tanh_single(benchmark::State& state) {
  const torch::Tensor x = variable(-1.f, 1.f, 1);
  const torch::Tensor seed = torch::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    torch::tanh(x).backward(seed);
    take_grad(x);
  }
  bench::report_per_op(state, 1);
}

void mul_single(benchmark::State& state) {
  const torch::Tensor x = variable(-1.f, 1.f, 1), w = variable(0.9f, 1.1f, 2);
  const torch::Tensor seed = torch::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    (x * w).backward(seed);
    take_grad(x);
    take_grad(w);
  }
  bench::report_per_op(state, 1);
}

BENCHMARK(tanh_chain)->Name("overhead/tanh_chain")->UseRealTime();
BENCHMARK(muladd_chain)->Name("overhead/muladd_chain")->UseRealTime();
BENCHMARK(tanh_single)->Name("overhead/tanh_single")->UseRealTime();
BENCHMARK(mul_single)->Name("overhead/mul_single")->UseRealTime();

}  // namespace
