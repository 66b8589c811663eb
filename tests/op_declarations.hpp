#pragma once
// The ops recur's public headers declare, read from the headers' text: every function at
// namespace scope in recur or recur::nn (not in a nested namespace such as detail, not a
// class member) whose result is a Var or holds Vars: Var, std::vector<Var>, the structs of
// Vars ops return (LstmState, ScanResult, OnnxScanResult), and `V` in a template over
// `TensorOrVar V`. Declarations made by function-like macros defined in the header, and by
// the list macros of ops/declare.hpp (RECUR_DECLARE_UNARY_OPS(exp, log)), are expanded first. Overloads share one name: operator+ is one op.
#include <filesystem>
#include <string>
#include <vector>

namespace recur::testing {

struct OpDeclaration {
  std::string name;    // "exp", "operator+", "lstm_cell"
  std::string header;  // where it is declared, relative to the directory read
};

// The ops declared in one header's text (`header` only labels them).
std::vector<OpDeclaration> var_ops_in_header_text(const std::string& text, const std::string& header);
// The ops declared in every .hpp under `ops_dir` (recursively), one entry per name, sorted.
std::vector<OpDeclaration> var_ops_declared_under(const std::filesystem::path& ops_dir);

}  // namespace recur::testing
