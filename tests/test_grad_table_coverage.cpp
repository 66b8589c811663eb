// Every op of ops/ has a row in the gradient table (PyTorch's OpInfo coverage): the ops are
// read from the public headers (op_declarations.hpp), so a new op without a row fails here,
// naming it. A row covers the op its name starts with and the ops it lists (grad_table.hpp).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "grad_table.hpp"
#include "op_declarations.hpp"

namespace recur::testing {
namespace {

const std::filesystem::path source_dir = RECUR_SOURCE_DIR;

// Ops whose gradients are tested outside the table, and the test file that does it.
struct Elsewhere {
  const char* op;
  const char* test_file;  // under tests/
  const char* why;
};
const Elsewhere tested_elsewhere[] = {
    {"until", "test_scan_gradients.cpp", "scan's stop condition: a marker, not a computation"},
};

std::vector<std::string> names_of(const std::vector<OpDeclaration>& ops) {
  std::vector<std::string> names;
  for (const auto& op : ops) names.push_back(op.name);
  return names;
}

const std::vector<OpDeclaration>& declared_ops() {
  static const auto ops = var_ops_declared_under(source_dir / "ops");
  return ops;
}

std::string read_text(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

TEST(GradTableCoverage, EveryOpHasARow) {
  const auto names = names_of(declared_ops());
  std::map<std::string, std::vector<std::string>> rows_of;
  for (const auto& c : grad_table())
    for (const auto& op : covered_ops(c, names)) rows_of[op].push_back(c.name);
  for (const auto& op : declared_ops()) {
    const bool exempt = std::any_of(std::begin(tested_elsewhere), std::end(tested_elsewhere),
                                    [&](const Elsewhere& e) { return op.name == e.op; });
    EXPECT_TRUE(exempt || rows_of.contains(op.name))
        << "op '" << op.name << "' (ops/" << op.header
        << ") has no row in the gradient table: add one in tests/grad_cases/, named after it or listing it";
  }
}

TEST(GradTableCoverage, EveryRowCoversDeclaredOps) {
  const auto names = names_of(declared_ops());
  for (const auto& c : grad_table()) {
    EXPECT_FALSE(covered_ops(c, names).empty())
        << "row '" << c.name << "' covers no op: name it after its op or list its ops with covers({...})";
    for (const auto& op : c.also_covers)
      EXPECT_TRUE(contains(names, op)) << "row '" << c.name << "' lists '" << op << "', which ops/ does not declare";
  }
}

TEST(GradTableCoverage, OpsTestedElsewhereAreDeclaredAndTested) {
  const auto names = names_of(declared_ops());
  for (const auto& e : tested_elsewhere) {
    EXPECT_TRUE(contains(names, e.op)) << e.op << " is exempt but ops/ does not declare it: drop the entry";
    const auto file = source_dir / "tests" / e.test_file;
    EXPECT_NE(read_text(file).find(std::string(e.op) + "("), std::string::npos)
        << e.op << " is said to be tested in " << file << ", which does not call it";
  }
}

// The reader finds what each kind of declaration declares: it is what makes the coverage
// test above able to fail.
TEST(GradTableCoverage, ReaderFindsEveryKindOfDeclaration) {
  const std::string header = R"(
#define DECLARE_PAIR(fn) \
  Tensor fn(const Tensor& x); \
  Var fn(const Var& x);
namespace recur {
DECLARE_PAIR(from_macro)  // Var not_a_comment(const Var&);
#undef DECLARE_PAIR
RECUR_DECLARE_BINARY_OPS(listed_a, listed_b)
Var plain(const Var& x, const Axes& axes = {}, bool keepdims = false);
std::vector<Var> pieces(const Var& x);
Tensor values_only(const Tensor& x);
inline Var operator+(const Var& a, const Var& b) { return add(a, b); }
template <TensorOrVar V> V either(const V& a, double s) { return scalar_op('{', a, s, false); }
template <class V> V not_constrained(const V& a);
struct Holder {
  Var member(const Var& x) const;
};
namespace detail {
Var internal(const Var& x);
}  // namespace detail
namespace {
Var hidden(const Var& x);
}
/* Var commented_out(const Var&); */
const char* text = "Var in_a_string(const Var&);";
}  // namespace recur
namespace recur::nn {
LstmState cell(const Var& x);
}  // namespace recur::nn
namespace other {
Var elsewhere(const Var& x);
}
)";
  const auto ops = names_of(var_ops_in_header_text(header, "test.hpp"));
  EXPECT_EQ(ops, (std::vector<std::string>{"from_macro", "listed_a", "listed_b", "plain", "pieces", "operator+", "either", "cell"}));
}

TEST(GradTableCoverage, ReaderFindsTheLibrarysOps) {
  const auto names = names_of(declared_ops());
  EXPECT_GE(names.size(), 70u);
  for (const char* op : {"exp", "add", "sum", "operator+", "pow", "split", "matmul_t", "lstm_cell", "fused_recurrence",
                         "scan", "onnx_scan", "cross_entropy"})
    EXPECT_TRUE(contains(names, op)) << op;
}

}  // namespace
}  // namespace recur::testing
