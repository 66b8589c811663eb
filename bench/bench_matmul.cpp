// matmul forward + backward (gradients to both operands) through recur's tape, against the
// three bare gemms it needs (bare_sgemm.hpp), in the same binary and run.
#include "bare_sgemm.hpp"
#include "recur_side.hpp"

namespace {

using recur::Tape;
using recur::Tensor;
using recur::Var;

// One training-step-like matmul: fresh tape, forward, backward with a given grad_output.
class RecurMatmul {
 public:
  RecurMatmul()
      : a_(bench::uniform_tensor({bench::kM, bench::kK}, -1.f, 1.f, 1)),
        b_(bench::uniform_tensor({bench::kK, bench::kN}, -1.f, 1.f, 2)),
        g_(bench::uniform_tensor({bench::kM, bench::kN}, -1.f, 1.f, 3)) {}

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
