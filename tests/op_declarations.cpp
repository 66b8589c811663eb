#include "op_declarations.hpp"

#include <algorithm>
#include <cctype>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

namespace recur::testing {
namespace {

// The text with comments removed and string and character literals emptied (their
// braces and semicolons are not code).
std::string code_only(const std::string& text) {
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 2, "//") == 0) {
      while (i < text.size() && text[i] != '\n') ++i;
      out += '\n';
    } else if (text.compare(i, 2, "/*") == 0) {
      i = std::min(text.find("*/", i + 2), text.size() - 2) + 1;
      out += ' ';
    } else if (text[i] == '"' || text[i] == '\'') {
      const char quote = text[i];
      out += quote;
      for (++i; i < text.size() && text[i] != quote; ++i)
        if (text[i] == '\\') ++i;
      out += quote;
    } else {
      out += text[i];
    }
  }
  return out;
}

struct Macro {
  std::vector<std::string> params;
  std::string body;
};

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) {
    item.erase(0, item.find_first_not_of(" \t"));
    item.erase(item.find_last_not_of(" \t") + 1);
    out.push_back(item);
  }
  return out;
}

// Preprocessor lines removed, macros defined in the text (function-like, and object-like
// ones that declare a list of functions) expanded where they are invoked.
std::string expand_macros(const std::string& text) {
  static const std::regex define(R"(^\s*#\s*define\s+(\w+)\(([^)]*)\)\s*(.*)$)");
  static const std::regex define_object(R"(^\s*#\s*define\s+(\w+)(?:\s+(.*))?$)");
  std::map<std::string, std::string> objects;
  std::map<std::string, Macro> macros;
  std::string code, logical;
  std::istringstream lines(text);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line.back() == '\\') {  // a continued line
      logical += line.substr(0, line.size() - 1) + ' ';
      continue;
    }
    logical += line;
    std::smatch m;
    if (std::regex_match(logical, m, define)) macros[m[1]] = {split_list(m[2]), m[3]};
    else if (std::regex_match(logical, m, define_object)) objects[m[1]] = m[2];
    const auto first = logical.find_first_not_of(" \t");
    if (first == std::string::npos || logical[first] != '#') code += logical;
    code += '\n';
    logical.clear();
  }
  for (const auto& [name, body] : objects) code = std::regex_replace(code, std::regex("\\b" + name + "\\b"), body);
  // The list macros of ops/declare.hpp (defined in another header): one Var form per name.
  static const std::regex declare_list(R"(\bRECUR_DECLARE_(?:UNARY|BINARY)_OPS\s*\(([^()]*)\))");
  std::string listed;
  auto rest = code.cbegin();
  for (std::sregex_iterator it(code.begin(), code.end(), declare_list), end; it != end; ++it) {
    listed.append(rest, (*it)[0].first);
    for (const auto& fn : split_list((*it)[1])) listed += "Var " + fn + "(const Var& x);\n";
    rest = (*it)[0].second;
  }
  listed.append(rest, code.cend());
  code = std::move(listed);
  for (int pass = 0; pass < 4; ++pass) {  // macros invoking macros
    for (const auto& [name, macro] : macros) {
      const std::regex call("\\b" + name + R"(\s*\(([^()]*)\))");
      std::string expanded;
      auto pos = code.cbegin();
      for (std::sregex_iterator it(code.begin(), code.end(), call), end; it != end; ++it) {
        expanded.append(pos, (*it)[0].first);
        std::string body = macro.body;
        const auto args = split_list((*it)[1]);
        for (std::size_t k = 0; k < macro.params.size() && k < args.size(); ++k)
          body = std::regex_replace(body, std::regex("\\b" + macro.params[k] + "\\b"), args[k]);
        expanded += body;
        pos = (*it)[0].second;
      }
      expanded.append(pos, code.cend());
      code = std::move(expanded);
    }
  }
  return code;
}

std::string collapse_spaces(const std::string& s) {
  std::string out;
  for (char ch : s) {
    const bool space = std::isspace(static_cast<unsigned char>(ch)) != 0;
    if (space && (out.empty() || out.back() == ' ')) continue;
    out += space ? ' ' : ch;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

bool holds_vars(const std::string& result, const std::string& template_params) {
  static const std::vector<std::string> var_results{"Var", "std::vector<Var>", "LstmState", "ScanResult",
                                                    "OnnxScanResult"};
  if (std::find(var_results.begin(), var_results.end(), result) != var_results.end()) return true;
  static const std::regex either(R"(\bTensorOrVar\s+(\w+))");
  std::smatch m;
  return std::regex_search(template_params, m, either) && result == m[1].str();
}

// The op a declaration (or a definition's head) at namespace scope declares, if its
// result holds Vars.
std::optional<std::string> var_op_name(const std::string& declaration) {
  std::string d = collapse_spaces(declaration);
  std::string template_params;
  if (d.rfind("template", 0) == 0) {  // template <...> with nested angle brackets
    const auto open = d.find('<');
    if (open == std::string::npos) return std::nullopt;
    std::size_t close = open;
    for (int depth = 0; close < d.size(); ++close) {
      depth += d[close] == '<' ? 1 : d[close] == '>' ? -1 : 0;
      if (depth == 0) break;
    }
    template_params = d.substr(open + 1, close - open - 1);
    d = collapse_spaces(d.substr(std::min(close + 1, d.size())));
  }
  static const std::regex op_head(R"(^(.*?)\b(operator\s*(?:\(\)|[^\s(]+))\s*\()");
  static const std::regex fn_head(R"(^([^(]*?)\b([A-Za-z_]\w*)\s*\()");
  std::smatch m;
  if (!std::regex_search(d, m, op_head) && !std::regex_search(d, m, fn_head)) return std::nullopt;
  std::string result = " " + m[1].str() + " ";
  for (const char* specifier : {" inline ", " static ", " constexpr ", " extern ", " [[nodiscard]] "})
    for (std::size_t p; (p = result.find(specifier)) != std::string::npos;) result.replace(p, std::strlen(specifier) - 1, "");
  result = collapse_spaces(result);
  result.erase(0, result.find_first_not_of(' '));
  std::string name = m[2].str();
  name.erase(std::remove(name.begin(), name.end(), ' '), name.end());
  if (!holds_vars(result, template_params)) return std::nullopt;
  return name;
}

}  // namespace

std::vector<OpDeclaration> var_ops_in_header_text(const std::string& text, const std::string& header) {
  const std::string code = expand_macros(code_only(text));
  static const std::regex namespace_head(R"(^\s*(?:inline\s+)?namespace\s*([\w:]*)\s*$)");
  // One entry per open brace: a namespace head (namespace a::b { opens both names), or
  // any other block (class, function, enum), inside which nothing is an op.
  struct Scope {
    bool is_namespace;
    std::string names;  // "recur::nn"; "(anonymous)" for namespace {
  };
  std::vector<Scope> scopes;
  auto namespace_path = [&]() -> std::optional<std::string> {
    std::string path;
    for (const auto& s : scopes) {
      if (!s.is_namespace) return std::nullopt;
      path += (path.empty() ? "" : "::") + s.names;
    }
    return path;
  };
  std::vector<OpDeclaration> out;
  auto consider = [&](const std::string& statement) {
    const auto path = namespace_path();
    if (!path || (*path != "recur" && *path != "recur::nn")) return;
    if (const auto name = var_op_name(statement)) out.push_back({*name, header});
  };
  std::string statement;
  int parens = 0;  // braces inside parentheses (default arguments = {}) open no scope
  for (char ch : code) {
    parens += ch == '(' ? 1 : ch == ')' ? -1 : 0;
    if (parens > 0 || (ch != '{' && ch != '}' && ch != ';')) {
      statement += ch;
      continue;
    }
    std::smatch m;
    if (ch == '{' && std::regex_match(statement, m, namespace_head)) {
      scopes.push_back({true, m[1].length() ? m[1].str() : "(anonymous)"});
    } else if (ch == '{') {
      consider(statement);  // a function defined in the header
      scopes.push_back({false, ""});
    } else if (ch == '}') {
      if (!scopes.empty()) scopes.pop_back();
    } else {
      consider(statement);
    }
    statement.clear();
  }
  return out;
}

std::vector<OpDeclaration> var_ops_declared_under(const std::filesystem::path& ops_dir) {
  std::map<std::string, OpDeclaration> by_name;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(ops_dir)) {
    if (entry.path().extension() != ".hpp") continue;
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    const std::string header = std::filesystem::relative(entry.path(), ops_dir).generic_string();
    for (auto& op : var_ops_in_header_text(text.str(), header)) by_name.emplace(op.name, op);
  }
  std::vector<OpDeclaration> out;
  for (auto& [name, op] : by_name) out.push_back(std::move(op));
  return out;
}

}  // namespace recur::testing
