// linear_recurrence's kernel split into lane groups and time chunks on several threads
// (ops/linear_recurrence_kernel_detail.hpp) gives the one-thread sequential loop's values:
// the kernel directly for every split, and the op's values and gradients end to end. Like
// every test_threads* file, it also runs under ThreadSanitizer.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <recur/ops/kernels/linear_recurrence_kernel_detail.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

using detail::Recurrence;
using detail::RecurrenceSplit;
using detail::TimeView;
constexpr DType f64 = DType::float64;

std::vector<double> random_values(std::int64_t n, Generator& gen, double low, double high) {
  const Tensor t = uniform({n}, low, high, gen, f64);
  return {t.data<double>(), t.data<double>() + n};
}

double max_diff(const std::vector<double>& x, const std::vector<double>& y) {
  double worst = 0;
  for (std::size_t i = 0; i < x.size(); ++i) worst = std::max(worst, std::abs(x[i] - y[i]));
  return worst;
}

// x_k = c_k x_{k-1} + d_k by the definition, one element at a time: the reference.
std::vector<double> by_definition(const Recurrence<double>& r) {
  std::vector<double> x(static_cast<std::size_t>(r.v.outer * r.v.steps * r.v.inner));
  for (std::int64_t o = 0; o < r.v.outer; ++o)
    for (std::int64_t i = 0; i < r.v.inner; ++i) {
      double state = r.start ? r.start[o * r.v.inner + i] : 0.0;
      for (std::int64_t k = 0; k < r.v.steps; ++k) {
        const std::int64_t at = r.at(o, k) + i;
        const bool from_zero = !r.start && k == 0;
        state = (from_zero ? 0.0 : r.c[at + r.coef_shift] * state) + r.d[at];
        x[static_cast<std::size_t>(at)] = state;
      }
    }
  return x;
}

TEST(LinearRecurrenceSplit, EverySplitGivesTheDefinitionsValues) {
  Generator gen(21);
  const std::vector<TimeView> views{{1, 200, 5}, {3, 97, 2}, {2, 7, 33}, {1, 3, 1}};
  const std::vector<RecurrenceSplit> splits{{1, 1, 1}, {2, 1, 2}, {3, 1, 3}, {1, 2, 2}, {1, 3, 3}, {2, 5, 3}, {1, 7, 4}, {4, 200, 3}};
  for (const TimeView& v : views) {
    const std::int64_t n = v.outer * v.steps * v.inner;
    const auto c = random_values(n, gen, -1.1, 1.1), d = random_values(n, gen, -1, 1);
    const auto start = random_values(v.outer * v.inner, gen, -1, 1);
    for (bool reverse : {false, true}) {
      // The forward pass (from h0, own coefficients) and the backward pass's form (from zero,
      // the coefficient of the step processed before: one step later in time, or earlier).
      for (bool backward_form : {false, true}) {
        const std::int64_t shift = !backward_form ? 0 : (reverse ? v.inner : -v.inner);
        std::vector<double> got(static_cast<std::size_t>(n), -7.0);
        const Recurrence<double> r{v, c.data(), shift, d.data(), backward_form ? nullptr : start.data(), got.data(), reverse};
        const auto want = by_definition(r);
        for (const RecurrenceSplit& s : splits) {
          std::fill(got.begin(), got.end(), -7.0);
          detail::run_recurrence(r, s);
          EXPECT_LE(max_diff(got, want), 1e-12)
              << "view [" << v.outer << ", " << v.steps << ", " << v.inner << "] split groups " << s.lane_groups
              << " chunks " << s.time_chunks << " threads " << s.threads << (reverse ? " reverse" : "")
              << (backward_form ? " backward form" : "");
        }
      }
    }
  }
}

TEST(LinearRecurrenceSplit, ChoosesLaneGroupsThenTimeChunksOnlyForMoreThanTwoThreads) {
  // Small problems stay on one thread.
  EXPECT_EQ(detail::choose_split({1, 100, 32}, 2).threads, 1);
  // Enough lanes: groups of at least 16, no chunks.
  const RecurrenceSplit lanes = detail::choose_split({1, 10'000, 64}, 2);
  EXPECT_EQ(lanes.threads, 2);
  EXPECT_EQ(lanes.lane_groups, 2);
  EXPECT_EQ(lanes.time_chunks, 1);
  // Few lanes: chunking doubles the work, which two threads cannot win back.
  EXPECT_EQ(detail::choose_split({1, 100'000, 4}, 2).time_chunks, 1);
  EXPECT_EQ(detail::choose_split({1, 100'000, 4}, 4).time_chunks, 4);
  // Many outer blocks: one task each.
  const RecurrenceSplit blocks = detail::choose_split({8, 10'000, 4}, 4);
  EXPECT_EQ(blocks.lane_groups, 1);
  EXPECT_EQ(blocks.time_chunks, 1);
}

// The op on a problem large enough to split, on one thread and on four: values and all three
// gradients agree (float64, so only the association of the chunked sums differs).
TEST(LinearRecurrenceSplit, TheOpsValuesAndGradientsDoNotDependOnTheThreadCount) {
  Generator gen(22);
  const int saved = blas::num_threads();
  for (const Shape& shape : {Shape{4096, 1, 4}, Shape{2048, 1, 64}}) {
    const Tensor a0 = uniform(shape, -1.0, 1.0, gen, f64), b0 = normal(shape, 0, 1, gen, f64);
    const Tensor h00 = normal({shape[1], shape[2]}, 0, 1, gen, f64), w = normal(shape, 0, 1, gen, f64);
    for (bool reverse : {false, true}) {
      std::vector<Tensor> results[2];
      for (int run = 0; run < 2; ++run) {
        blas::set_num_threads(run == 0 ? 1 : 4);
        Tape tape;
        const Var a = tape.variable(a0), b = tape.variable(b0), h0 = tape.variable(h00);
        const Var h = linear_recurrence(a, b, h0, {.reverse = reverse});
        const Var inputs[] = {a, b, h0}, loss[] = {sum(h * tape.constant(w))};
        const auto g = tape.grad(loss, inputs);
        results[run] = {h.value(), g[0].value(), g[1].value(), g[2].value()};
      }
      for (std::size_t k = 0; k < 4; ++k)
        EXPECT_LE(max_abs_diff(results[0][k], results[1][k]), 1e-9)
            << to_string(shape) << (reverse ? " reverse" : "") << " result " << k;
    }
  }
  blas::set_num_threads(saved);
}

}  // namespace
}  // namespace recur
