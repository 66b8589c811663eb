// Runs every row of the gradient-check table (tests/grad_cases/) over several random
// shape draws, first and second order, in float64 against central differences.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "grad_table.hpp"

namespace recur::testing {
namespace {

Tensor fill(const Shape& shape, Domain d, Rng& rng) {
  Tensor t = Tensor::empty(shape, DType::float64);
  double* p = t.data<double>();
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> pos(0.5, 2.0), mag(0.3, 2.0);
  std::bernoulli_distribution sign(0.5);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    switch (d) {
      case Domain::any: p[i] = normal(rng); break;
      case Domain::positive: p[i] = pos(rng); break;
      case Domain::away_from_zero: p[i] = (sign(rng) ? 1 : -1) * mag(rng); break;
      case Domain::distinct: p[i] = normal(rng); break;
    }
  }
  if (d == Domain::distinct) {  // a shuffled grid 0.1 apart, plus a small jitter
    std::vector<double> grid(t.numel());
    for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = 0.1 * static_cast<double>(i) - 0.05 * grid.size();
    std::shuffle(grid.begin(), grid.end(), rng);
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = grid[i] + 0.01 * std::tanh(p[i]);
  }
  return t;
}

class GradTable : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GradTable, MatchesFiniteDifferences) {
  const GradCase& c = grad_table()[GetParam()];
  for (std::uint64_t trial = 0; trial < 4; ++trial) {
    Rng rng(1000 * GetParam() + trial);
    std::vector<Tensor> inputs;
    std::string shapes;
    for (const auto& s : c.shapes(rng)) {
      inputs.push_back(fill(s, c.domain, rng));
      shapes += to_string(s) + " ";
    }
    const auto report = check_gradients(c.fn, inputs, {.second_order = c.second_order, .seed = trial});
    EXPECT_TRUE(report.ok) << c.name << " with input shapes " << shapes << ": " << report.failure;
    EXPECT_LT(report.max_error_first, 1e-4) << c.name;
  }
}

std::string case_name(const ::testing::TestParamInfo<std::size_t>& info) {
  std::string n = grad_table()[info.param].name;
  for (auto& ch : n)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return n;
}

INSTANTIATE_TEST_SUITE_P(EveryOp, GradTable, ::testing::Range<std::size_t>(0, grad_table().size()), case_name);

TEST(GradTableMeta, NamesAreUnique) {
  std::set<std::string> names;
  for (const auto& c : grad_table()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

}  // namespace
}  // namespace recur::testing
