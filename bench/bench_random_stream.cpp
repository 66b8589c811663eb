// RandomStream draws outside scan: each records a sample and the advanced state on the tape
// and assigns the state to the stream's Shared. A [1, 32] float32 draw, kChain draws per
// fresh Tape; "per_op" is the time per draw (issue 14's target: at most 1 us).
#include "recur_side.hpp"

namespace {

using recur::RandomStream;
using recur::Tape;
using recur::Var;

template <class Draw>
void draws(benchmark::State& state, Draw draw) {
  RandomStream stream(1234);
  for (auto _ : state) {
    Tape tape;
    for (int i = 0; i < bench::kChain; ++i) {
      const Var sample = draw(stream, tape);
      benchmark::DoNotOptimize(sample.value().raw_data());
    }
  }
  bench::report_per_op(state, bench::kChain);
}

void uniform_draw(benchmark::State& state) {
  draws(state, [](RandomStream& s, Tape&) { return s.uniform({bench::kRows, bench::kCols}); });
}

void normal_draw(benchmark::State& state) {
  draws(state, [](RandomStream& s, Tape&) { return s.normal({bench::kRows, bench::kCols}); });
}

void binomial_draw(benchmark::State& state) {
  const recur::Tensor p = recur::full({bench::kRows, bench::kCols}, 0.3);
  draws(state, [&](RandomStream& s, Tape& tape) { return s.binomial(tape.constant(p)); });
}

BENCHMARK(uniform_draw)->Name("random_stream/uniform_1x32")->UseRealTime();
BENCHMARK(normal_draw)->Name("random_stream/normal_1x32")->UseRealTime();
BENCHMARK(binomial_draw)->Name("random_stream/binomial_1x32")->UseRealTime();

}  // namespace
