// Runs every row of the gradient-check table (tests/grad_cases/) over several random
// shape draws, first and second order, in float64 against central differences.
#include <gtest/gtest.h>

#include <set>

#include "grad_table.hpp"
#include "row_runs.hpp"

namespace recur::testing {
namespace {

class GradTable : public ::testing::TestWithParam<std::size_t> {};

TEST_P(GradTable, MatchesFiniteDifferences) {
  const GradCase& c = grad_table()[GetParam()];
  for (std::uint64_t trial = 0; trial < 4; ++trial) {
    Rng rng = row_rng(c, trial);
    const std::vector<Tensor> inputs = draw_inputs(c, rng);
    std::string shapes;
    for (const auto& x : inputs) shapes += to_string(x.shape()) + " ";
    GradCheckOptions options{.second_order = c.second_order, .seed = trial};
    if (c.finite_difference_atol > 0) options.atol = c.finite_difference_atol;
    const auto report = check_gradients(c.fn.on_vars, inputs, options);
    EXPECT_TRUE(report.ok) << c.name << " with input shapes " << shapes << ": " << report.failure;
    EXPECT_LT(report.max_error_first, 1e-4) << c.name;
  }
}

INSTANTIATE_TEST_SUITE_P(EveryOp, GradTable, ::testing::Range<std::size_t>(0, grad_table().size()),
                         [](const auto& info) { return test_name_of_row(info.param); });

TEST(GradTableMeta, NamesAreUnique) {
  std::set<std::string> names;
  for (const auto& c : grad_table()) EXPECT_TRUE(names.insert(c.name).second) << c.name;
}

}  // namespace
}  // namespace recur::testing
