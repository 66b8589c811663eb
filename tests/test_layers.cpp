// The library's layers, enforced: a file includes only its own room and the rooms below it
// (docs/architecture.md). One CMake target holds core, autodiff and ops, so the compiler
// would not stop an include that goes up; this test does, naming the file and the line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace recur::testing {
namespace {

namespace fs = std::filesystem;

// A room and the rooms its files may include, itself first. Longest prefix wins.
struct Room {
  std::string path;
  std::vector<std::string> may_include;
};

const std::vector<Room>& rooms() {
  static const std::vector<std::string> below_scan{"core", "autodiff", "ops/kernels", "ops"};
  auto with = [](std::vector<std::string> base, std::initializer_list<std::string> more) {
    base.insert(base.end(), more);
    return base;
  };
  static const std::vector<Room> all{
      {"core", {"core"}},
      {"autodiff", {"autodiff", "core"}},
      {"ops/kernels", {"ops/kernels", "core"}},  // loops chosen at run time: no autodiff
      {"ops", below_scan},                       // the primitive ops
      {"ops/scan", with(below_scan, {"ops/scan"})},
      {"ops/nn", with(below_scan, {"ops/scan", "ops/nn"})},
      // ONNX: import and export each use what lies beside them (ops/onnx/*), not each other.
      {"ops/onnx", with(below_scan, {"ops/scan", "ops/nn", "ops/onnx"})},
      {"ops/onnx/import", with(below_scan, {"ops/scan", "ops/nn", "ops/onnx", "ops/onnx/import"})},
      {"ops/onnx/export", with(below_scan, {"ops/scan", "ops/nn", "ops/onnx", "ops/onnx/export"})},
      {"distributed", with(below_scan, {"ops/scan", "ops/nn", "distributed"})},
  };
  return all;
}

// The room a path (relative to the source root, or after <recur/...>) lies in: the longest
// room path that is a directory prefix of it; nullptr outside every room.
const Room* room_of(const std::string& path) {
  const Room* best = nullptr;
  for (const Room& r : rooms())
    if (path.rfind(r.path + "/", 0) == 0 && (!best || r.path.size() > best->path.size())) best = &r;
  return best;
}

// The path after `#include <recur/` on `line`, or "" for any other line. (Read by hand:
// GCC 12's sanitizer build warns inside std::regex.)
std::string recur_include(const std::string& line) {
  std::size_t i = line.find_first_not_of(" \t");
  if (i == std::string::npos || line[i] != '#') return "";
  i = line.find_first_not_of(" \t", i + 1);
  if (i == std::string::npos || line.compare(i, 7, "include") != 0) return "";
  i = line.find_first_not_of(" \t", i + 7);
  if (i == std::string::npos || line.compare(i, 7, "<recur/") != 0) return "";
  const std::size_t end = line.find('>', i);
  return end == std::string::npos ? "" : line.substr(i + 7, end - i - 7);
}

// "file:line: includes <recur/...>, above its room" for every include of `text` (a file
// of room `file`'s) that its room may not make.
std::vector<std::string> violations_in(const std::string& file, const std::string& text) {
  std::vector<std::string> found;
  const Room* from = room_of(file);
  if (!from) return found;
  std::istringstream lines(text);
  int n = 0;
  for (std::string line; std::getline(lines, line);) {
    ++n;
    const std::string target = recur_include(line);
    if (target.empty()) continue;
    const Room* to = room_of(target);
    const bool allowed = to && std::find(from->may_include.begin(), from->may_include.end(), to->path) !=
                                   from->may_include.end();
    if (!allowed)
      found.push_back(file + ":" + std::to_string(n) + ": includes <recur/" + target + ">, which room " + from->path +
                      " may not include");
  }
  return found;
}

std::string read_text(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(Layers, NoIncludeGoesUpALayer) {
  const fs::path root = RECUR_SOURCE_DIR;
  std::vector<std::string> found;
  std::size_t files = 0;
  for (const char* top : {"core", "autodiff", "ops", "distributed"})
    for (const auto& e : fs::recursive_directory_iterator(root / top)) {  // links are not followed
      const std::string ext = e.path().extension().string();
      if (!e.is_regular_file() || (ext != ".cpp" && ext != ".hpp")) continue;
      ++files;
      const std::string rel = fs::relative(e.path(), root).generic_string();
      for (std::string& v : violations_in(rel, read_text(e.path()))) found.push_back(std::move(v));
    }
  EXPECT_GT(files, 200u);
  EXPECT_TRUE(found.empty()) << ::testing::PrintToString(found);
}

// The check can fail: each kind of include that goes up is found.
TEST(Layers, TheCheckFindsIncludesThatGoUp) {
  EXPECT_EQ(violations_in("core/tensor.cpp", "#include <recur/autodiff/var.hpp>\n").size(), 1u);
  EXPECT_EQ(violations_in("ops/unary.cpp", "#include <recur/core/tensor.hpp>\n#  include <recur/ops/nn/cells.hpp>\n"),
            std::vector<std::string>{"ops/unary.cpp:2: includes <recur/ops/nn/cells.hpp>, which room ops may not include"});
  EXPECT_EQ(violations_in("ops/kernels/k.cpp", "#include <recur/autodiff/tape.hpp>\n").size(), 1u);
  EXPECT_EQ(violations_in("ops/onnx/import/a.cpp", "#include <recur/ops/onnx/export/b_detail.hpp>\n").size(), 1u);
  EXPECT_EQ(violations_in("ops/nn/a.cpp", "#include <recur/recur.hpp>\n").size(), 1u);
  EXPECT_TRUE(violations_in("ops/onnx/export/a.cpp", "#include <recur/ops/onnx/model.hpp>\n"
                                                     "#include <recur/ops/nn/cells.hpp>\n"
                                                     "#include <recur/ops/kernels/fast_math_detail.hpp>\n")
                  .empty());
}

}  // namespace
}  // namespace recur::testing
