// Prints docs/onnx.md's conformance table: every node test of libonnx-testdata that uses
// an op recur imports, and whether it passes or why not (scripts/onnx_conformance_table.sh).
#include <fstream>
#include <iostream>
#include <set>

#include <onnx/onnx_pb.h>

#include <recur/ops/onnx/model.hpp>

#include "node_test.hpp"

namespace {

// The op types of the model's main graph.
std::set<std::string> op_types_of(const std::filesystem::path& model) {
  std::ifstream in(model, std::ios::binary);
  ::onnx::ModelProto proto;
  proto.ParseFromIstream(&in);
  std::set<std::string> out;
  for (const auto& n : proto.graph().node()) out.insert(n.op_type());
  return out;
}

// The message on one line, without the test data's directory.
std::string one_line(std::string s, const std::string& dir) {
  for (std::size_t at; (at = s.find(dir)) != std::string::npos;) s.erase(at, dir.size());
  for (auto& ch : s)
    if (ch == '\n' || ch == '|') ch = ' ';
  return s;
}

}  // namespace

int main() {
  using recur::testing::NodeTestResult;
  const auto imported = recur::onnx_io::imported_op_types();
  const std::set<std::string> known(imported.begin(), imported.end());
  int passed = 0, listed = 0, total = 0;
  std::cout << "| node test | result |\n|---|---|\n";
  for (const auto& dir : recur::testing::node_test_dirs()) {
    ++total;
    const auto ops = op_types_of(dir / "model.onnx");
    bool uses_imported = false;
    for (const auto& op : ops) uses_imported = uses_imported || known.count(op) > 0;
    if (!uses_imported) continue;
    ++listed;
    std::string result;
    if (!recur::testing::node_test_supported(dir)) {
      result = "not run: uses ";
      for (const auto& op : recur::onnx_io::unsupported_ops((dir / "model.onnx").string())) result += op + " ";
    } else {
      const auto r = recur::testing::run_node_test(dir);
      if (r.kind == NodeTestResult::Kind::passed) {
        result = "pass";
        ++passed;
      } else {
        result = std::string(r.kind == NodeTestResult::Kind::unsupported ? "skipped: " : "FAILS: ") + one_line(r.detail, dir.parent_path().string() + "/");
      }
    }
    std::cout << "| `" << dir.filename().string() << "` | " << result << " |\n";
  }
  std::cout << "\n" << passed << " of the " << listed << " node tests that use an op recur imports pass (" << total
            << " node tests in all).\n";
}
