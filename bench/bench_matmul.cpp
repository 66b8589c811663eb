// matmul forward + backward (gradients to both operands) through recur's tape, against the
// three bare gemms it needs (bare_sgemm.hpp), in the same binary and run.
#include <recur/recur.hpp>

#include "bare_sgemm.hpp"

namespace {

using recur::Tape;
using recur::Tensor;
using recur::Var;

// One training-step-like matmul: fresh tape, forward, backward with a given grad_output.
class RecurMatmul {
 public:
  RecurMatmul()
      : a_(recur::from_vector(bench::uniform(bench::kM * bench::kK, -1.f, 1.f, 1), {bench::kM, bench::kK})),
        b_(recur::from_vector(bench::uniform(bench::kK * bench::kN, -1.f, 1.f, 2), {bench::kK, bench::kN})),
        g_(recur::from_vector(bench::uniform(bench::kM * bench::kN, -1.f, 1.f, 3), {bench::kM, bench::kN})) {}

  void run() const {
    Tape tape;
    const Var a = tape.variable(a_), b = tape.variable(b_);
    tape.backward(recur::matmul(a, b), g_);
    benchmark::DoNotOptimize(a.grad().raw_data());
    benchmark::DoNotOptimize(b.grad().raw_data());
    benchmark::ClobberMemory();
  }

 private:
  Tensor a_, b_, g_;
};

void matmul_fwd_bwd(benchmark::State& state) {
  const RecurMatmul step;
  for (auto _ : state) step.run();
  bench::report_per_op(state, 1);
  bench::report_matmul_flops(state);
}

// The same, back to back with the bare gemms (see bench::paired_with_bare).
void matmul_vs_bare(benchmark::State& state) {
  const RecurMatmul step;
  bench::paired_with_bare(state, [&] { step.run(); });
}

BENCHMARK(matmul_fwd_bwd)->Name("matmul/fwd_bwd")->UseRealTime();
BENCHMARK(matmul_vs_bare)->Name("matmul/paired_with_bare")->UseRealTime();

}  // namespace
