// Recording overhead of recur's tape: forward + backward of elementwise ops on a [1, 32]
// float32 tensor, where the arithmetic is negligible and the bookkeeping is what counts.
// Every iteration uses a fresh Tape, as a training step would.
#include "recur_side.hpp"

namespace {

using recur::Tape;
using recur::Tensor;
using recur::Var;

Tensor input(float lo, float hi, unsigned seed) {
  return bench::uniform_tensor({bench::kRows, bench::kCols}, lo, hi, seed);
}

// y = tanh(y), kChain times, then backward.
void tanh_chain(benchmark::State& state) {
  const Tensor x0 = input(-1.f, 1.f, 1);
  const Tensor seed = recur::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    Tape tape;
    const Var x = tape.variable(x0);
    Var y = x;
    for (int i = 0; i < bench::kChain; ++i) y = recur::tanh(y);
    tape.backward(y, seed);
    benchmark::DoNotOptimize(x.grad().raw_data());
  }
  bench::report_per_op(state, bench::kChain);
}

// y = y * w + b, kChain / 2 times (kChain binary ops, both operands need gradients).
// w near 1 keeps the values and gradients far from float underflow.
void muladd_chain(benchmark::State& state) {
  const Tensor x0 = input(-1.f, 1.f, 1), w0 = input(0.9f, 1.1f, 2), b0 = input(-0.1f, 0.1f, 3);
  const Tensor seed = recur::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    Tape tape;
    const Var x = tape.variable(x0), w = tape.variable(w0), b = tape.variable(b0);
    Var y = x;
    for (int i = 0; i < bench::kChain / 2; ++i) y = y * w + b;
    tape.backward(y, seed);
    benchmark::DoNotOptimize(x.grad().raw_data());
    benchmark::DoNotOptimize(w.grad().raw_data());
    benchmark::DoNotOptimize(b.grad().raw_data());
  }
  bench::report_per_op(state, bench::kChain);
}

// One op and its backward per tape: includes making and destroying the tape.
void tanh_single(benchmark::State& state) {
  const Tensor x0 = input(-1.f, 1.f, 1);
  const Tensor seed = recur::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    Tape tape;
    const Var x = tape.variable(x0);
    tape.backward(recur::tanh(x), seed);
    benchmark::DoNotOptimize(x.grad().raw_data());
  }
  bench::report_per_op(state, 1);
}

void mul_single(benchmark::State& state) {
  const Tensor x0 = input(-1.f, 1.f, 1), w0 = input(0.9f, 1.1f, 2);
  const Tensor seed = recur::ones({bench::kRows, bench::kCols});
  for (auto _ : state) {
    Tape tape;
    const Var x = tape.variable(x0), w = tape.variable(w0);
    tape.backward(x * w, seed);
    benchmark::DoNotOptimize(x.grad().raw_data());
    benchmark::DoNotOptimize(w.grad().raw_data());
  }
  bench::report_per_op(state, 1);
}

BENCHMARK(tanh_chain)->Name("overhead/tanh_chain")->UseRealTime();
BENCHMARK(muladd_chain)->Name("overhead/muladd_chain")->UseRealTime();
BENCHMARK(tanh_single)->Name("overhead/tanh_single")->UseRealTime();
BENCHMARK(mul_single)->Name("overhead/mul_single")->UseRealTime();

}  // namespace
