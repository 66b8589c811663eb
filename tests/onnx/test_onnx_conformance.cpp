// ONNX's node tests (libonnx-testdata) whose ops recur imports: one test each, named after
// the test directory. A test that needs something recur does not import (an element type,
// an attribute value) is skipped with the reason; docs/onnx.md lists them all.
#include <gtest/gtest.h>

#include "node_test.hpp"

namespace recur::testing {
namespace {

std::vector<std::string> supported_node_tests() {
  std::vector<std::string> names;
  for (const auto& dir : node_test_dirs())
    if (node_test_supported(dir)) names.push_back(dir.filename().string());
  return names;
}

class OnnxNodeTest : public ::testing::TestWithParam<std::string> {};

TEST_P(OnnxNodeTest, MatchesExpectedOutputs) {
  const auto result = run_node_test(std::filesystem::path(RECUR_ONNX_NODE_TESTS) / GetParam());
  if (result.kind == NodeTestResult::Kind::unsupported) GTEST_SKIP() << result.detail;
  EXPECT_EQ(result.kind, NodeTestResult::Kind::passed) << result.detail;
}

INSTANTIATE_TEST_SUITE_P(Node, OnnxNodeTest, ::testing::ValuesIn(supported_node_tests()),
                         [](const auto& info) { return info.param; });
GTEST_ALLOW_UNINSTANTIATED_PARAMETERIZED_TEST(OnnxNodeTest);

}  // namespace
}  // namespace recur::testing
