#pragma once
// One ONNX node test of libonnx-testdata (onnx/backend/test/data/node/<name>): its
// model.onnx run on every test_data_set_*, outputs compared as ONNX's backend tests do
// (rtol 1e-3, atol 1e-7, NaN equal to NaN).
#include <filesystem>
#include <string>
#include <vector>

namespace recur::testing {

struct NodeTestResult {
  enum class Kind { passed, unsupported, failed };
  Kind kind = Kind::failed;
  std::string detail;  // why it is unsupported or failed
};

// The node test directories (sorted), or none when libonnx-testdata is not installed.
std::vector<std::filesystem::path> node_test_dirs();
// Whether recur imports every op of the test's model (in body graphs too).
bool node_test_supported(const std::filesystem::path& dir);
NodeTestResult run_node_test(const std::filesystem::path& dir);

}  // namespace recur::testing
