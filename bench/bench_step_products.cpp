// The products inside the RNN suite's training steps, one at a time, so that a change to one
// kernel shows in its own figure (docs/performance.md quotes these): an LSTM's per-step
// recurrent products (blas::RepeatedGemm: T steps of B rows on W_hh, forward h W_hh^T and
// backward dg W_hh, on whatever backend it chooses, named in the label) and its weight
// gradients over the whole sequence (blas::gemm with A transposed, direct or as C^T).
#include <cstdint>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include <recur/core/blas.hpp>
#include <recur/core/blas_narrow_detail.hpp>
#include <recur/core/repeated_gemm.hpp>

#include "bench_common.hpp"
#include "rnn_suite.hpp"

namespace {

using recur::blas::RepeatedGemm;

// T products C_t = A_t op(W) + C_t, [B, k] x [k, n], A_t new at each step; W as the layer
// holds it, [G H, H] for a cell of G gates (LSTM 4, RNN 1): forward reads it transposed
// (k = H, n = G H), backward as it is (k = G H, n = H).
void step_product(benchmark::State& state, const bench::rnn::Config& c, std::int64_t gates, bool forward) {
  const std::int64_t gh = gates * c.hidden, h = c.hidden, m = c.batch, k = forward ? h : gh, n = forward ? gh : h;
  const std::vector<float> w = bench::uniform(gh * h, -0.05f, 0.05f, 1);
  const std::vector<float> a = bench::uniform(c.steps * m * k, -1.f, 1.f, 2);
  std::vector<float> out(static_cast<std::size_t>(c.steps * m * n), 0.f);
  const RepeatedGemm<float> product(m, n, k, w.data(), h, forward, k, n, 1.f);
  for (auto _ : state) {
    for (std::int64_t t = 0; t < c.steps; ++t) product(a.data() + t * m * k, out.data() + t * m * n);
    benchmark::DoNotOptimize(out.data());
    benchmark::ClobberMemory();
  }
  state.SetLabel(std::string(product.backend()) + (product.splits() ? ", tiles shared" : "") + ", " +
                 std::to_string(product.chunks()) + " chunk(s)");
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(c.steps * m * n * k),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

// dW = dG^T X over every step's rows: [G H, T B] x [T B, width], width the input size (dW_ih)
// or H (dW_hh); blas::gemm's own choice of form, or the one `form` forces.
void weight_grad(benchmark::State& state, const bench::rnn::Config& c, bool input,
                 recur::blas::detail::NarrowTransposed form) {
  const std::int64_t gh = 4 * c.hidden, rows = c.steps * c.batch, width = input ? c.input : c.hidden;
  const std::vector<float> dg = bench::uniform(rows * gh, -1.f, 1.f, 3), x = bench::uniform(rows * width, -1.f, 1.f, 4);
  std::vector<float> dw(static_cast<std::size_t>(gh * width));
  recur::blas::detail::set_narrow_transposed(form);
  for (auto _ : state) {
    recur::blas::gemm(true, false, gh, width, rows, 1.f, dg.data(), gh, x.data(), width, 0.f, dw.data(), width);
    benchmark::DoNotOptimize(dw.data());
    benchmark::ClobberMemory();
  }
  const bool transposed = recur::blas::detail::runs_transposed(gh, width, rows, 0.0, true);
  recur::blas::detail::set_narrow_transposed(recur::blas::detail::NarrowTransposed::measured);
  state.SetLabel(transposed ? "as C^T" : "direct");
  state.counters["flops"] = benchmark::Counter(2.0 * static_cast<double>(gh * width * rows),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

[[maybe_unused]] const bool registered = [] {
  using recur::blas::detail::NarrowTransposed;
  auto add = [](const std::string& name, auto run) {
    benchmark::RegisterBenchmark(name.c_str(), run)->UseRealTime()->Unit(benchmark::kMillisecond);
  };
  for (const bench::rnn::Config& c : bench::rnn::kConfigs) {
    if (c.chunk < c.steps) continue;  // TBPTT: M's shapes
    const std::string config = c.name;
    for (const auto& [cell, gates] : {std::pair{"lstm", 4}, std::pair{"rnn", 1}})
      for (const bool forward : {true, false})
        add(std::string("step_product/") + cell + "/" + config + (forward ? "/forward" : "/backward"),
            [c, gates, forward](benchmark::State& s) { step_product(s, c, gates, forward); });
    // dW_ih (few columns at S and M) in each form; dW_hh in blas::gemm's.
    for (const auto& way : {std::pair{NarrowTransposed::measured, "auto"}, std::pair{NarrowTransposed::none, "direct"},
                            std::pair{NarrowTransposed::any, "transposed"}}) {
      const NarrowTransposed form = way.first;
      add("weight_grad/lstm/" + config + "/dW_ih/" + way.second,
          [c, form](benchmark::State& s) { weight_grad(s, c, true, form); });
    }
    add("weight_grad/lstm/" + config + "/dW_hh/auto",
        [c](benchmark::State& s) { weight_grad(s, c, false, NarrowTransposed::measured); });
  }
  return true;
}();

}  // namespace
