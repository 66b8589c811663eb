// The linear recurrence h_t = a_t * h_{t-1} + b_t on [kRows, kCols] float32 states, forward
// + backward (gradients to a, b and h0), at T = 10^4 and 10^5 steps: linear_recurrence (one
// op; its backward is the reverse recurrence) against the same step written as a jax::scan
// (T recorded steps). Times are per step; the paired benchmark gives the ratio scan / op.
#include <utility>

#include "recur_side.hpp"

namespace {

using recur::Tape;
using recur::Tensor;
using recur::Var;

class Recurrence {
 public:
  explicit Recurrence(std::int64_t steps)
      : a_(bench::uniform_tensor({steps, bench::kRows, bench::kCols}, 0.5f, 1.f, 1)),
        b_(bench::uniform_tensor({steps, bench::kRows, bench::kCols}, -1.f, 1.f, 2)),
        h0_(bench::uniform_tensor({bench::kRows, bench::kCols}, -1.f, 1.f, 3)) {}

  void op() const {
    Tape tape;
    const Var a = tape.variable(a_), b = tape.variable(b_), h0 = tape.variable(h0_);
    finish(tape, recur::linear_recurrence(a, b, h0), a, b, h0);
  }

  void scan() const {
    Tape tape;
    const Var a = tape.variable(a_), b = tape.variable(b_), h0 = tape.variable(h0_);
    const auto step = [](const Var& h, const std::pair<Var, Var>& x) {
      const Var next = x.first * h + x.second;
      return std::pair{next, next};
    };
    finish(tape, recur::jax::scan(step, h0, std::pair{a, b}).second, a, b, h0);
  }

 private:
  static void finish(Tape& tape, const Var& hs, const Var& a, const Var& b, const Var& h0) {
    tape.backward(recur::sum(hs));
    benchmark::DoNotOptimize(a.grad().raw_data());
    benchmark::DoNotOptimize(b.grad().raw_data());
    benchmark::DoNotOptimize(h0.grad().raw_data());
    benchmark::ClobberMemory();
  }

  Tensor a_, b_, h0_;
};

void fused(benchmark::State& state) {
  const Recurrence r(state.range(0));
  for (auto _ : state) r.op();
  bench::report_per_op(state, static_cast<double>(state.range(0)));
}

void as_scan(benchmark::State& state) {
  const Recurrence r(state.range(0));
  for (auto _ : state) r.scan();
  bench::report_per_op(state, static_cast<double>(state.range(0)));
}

// scan / linear_recurrence, back to back (see bench::paired_ratio).
void scan_vs_fused(benchmark::State& state) {
  const Recurrence r(state.range(0));
  bench::paired_ratio(state, [&] { r.scan(); }, [&] { r.op(); });
}

BENCHMARK(fused)->Name("linear_recurrence/op")->Arg(10'000)->Arg(100'000)->UseRealTime();
BENCHMARK(as_scan)->Name("linear_recurrence/jax_scan")->Arg(10'000)->Arg(100'000)->UseRealTime();
BENCHMARK(scan_vs_fused)->Name("linear_recurrence/paired_scan_with_op")->Arg(10'000)->Arg(100'000)->UseRealTime();

}  // namespace
