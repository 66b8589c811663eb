// recur_doc_extract: turns the C++ code blocks of one Markdown page into one GoogleTest
// source, so that ctest compiles and runs every example of the README and the guide and
// none can go stale.
//
//   recur_doc_extract <page.md> <name used in messages, e.g. docs/scan.md> <out.cpp>
//
// The conventions, for writers of the guide (also in docs/README.md):
//   ```cpp               a test: the block is the body of a function, run in a fresh
//                        empty working directory (write files by plain relative names)
//   ```cpp file-scope    declarations at namespace scope: helpers for the page's later blocks
//   ```cpp compile-only  compiled as the body of a function that is never run (the text
//                        must say why); keep these rare
//   ```cpp case=<id>     a test that checks row <id> of a table whose first column is
//                        "case": every row needs its block and every such block its row
// Every block sees <recur/recur.hpp>, `using namespace recur;` and an assert() that works
// in Release too; #include lines of any block move to the top of the file. `#line`
// directives make compiler errors and failed asserts point at the Markdown page.
#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <iterator>
#include <map>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

enum class Kind { run, file_scope, compile_only };

struct Block {
  int fence_line = 0;  // 1-based line of the opening fence
  Kind kind = Kind::run;
  std::string case_id;  // "" unless case=<id>
  std::vector<std::string> lines;
};

struct Page {
  std::vector<Block> blocks;
  std::vector<std::string> case_rows;  // first cells of tables headed "case", in order
};

[[noreturn]] void die(const std::string& where, int line, const std::string& what) {
  std::cerr << where << ":" << line << ": recur_doc_extract: " << what << "\n";
  std::exit(1);
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

std::vector<std::string> words(const std::string& s) {
  std::istringstream in(s);
  return {std::istream_iterator<std::string>(in), {}};
}

bool is_cpp(std::string language) {
  std::transform(language.begin(), language.end(), language.begin(), [](unsigned char c) { return std::tolower(c); });
  return language == "cpp" || language == "c++" || language == "cxx" || language == "cc";
}

// A table row's cells; the outer pipes are optional, "\|" is not a separator.
std::vector<std::string> cells(const std::string& row) {
  std::vector<std::string> out;
  std::string t = trim(row), cell;
  if (!t.empty() && t.front() == '|') t.erase(0, 1);
  if (!t.empty() && t.back() == '|' && (t.size() < 2 || t[t.size() - 2] != '\\')) t.pop_back();
  for (std::size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '\\' && i + 1 < t.size() && t[i + 1] == '|') {
      cell += '|';
      ++i;
    } else if (t[i] == '|') {
      out.push_back(trim(cell));
      cell.clear();
    } else {
      cell += t[i];
    }
  }
  out.push_back(trim(cell));
  return out;
}

bool is_table_separator(const std::string& line) {
  const std::string t = trim(line);
  if (t.empty() || t.find('-') == std::string::npos) return false;
  return std::all_of(t.begin(), t.end(), [](char c) { return c == '|' || c == '-' || c == ':' || c == ' '; });
}

std::string without_backticks(std::string s) {
  s.erase(std::remove(s.begin(), s.end(), '`'), s.end());
  return trim(s);
}

// Reads the fenced blocks (``` or ~~~, any indentation, which is removed from their lines)
// and the rows of the "case" tables.
Page parse(const std::string& name, const std::vector<std::string>& lines) {
  Page page;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& line = lines[i];
    const std::size_t indent = line.find_first_not_of(' ');
    if (indent == std::string::npos) continue;
    const char c = line[indent];
    if (c == '|' && i + 1 < lines.size() && is_table_separator(lines[i + 1])) {
      std::string head = cells(line).front();
      std::transform(head.begin(), head.end(), head.begin(), [](unsigned char ch) { return std::tolower(ch); });
      for (i += 2; i < lines.size() && trim(lines[i]).starts_with("|"); ++i)
        if (head == "case") page.case_rows.push_back(without_backticks(cells(lines[i]).front()));
      --i;
      continue;
    }
    if (c != '`' && c != '~') continue;
    const std::size_t fence_end = line.find_first_not_of(c, indent);
    const std::size_t fence_length = (fence_end == std::string::npos ? line.size() : fence_end) - indent;
    if (fence_length < 3) continue;
    const std::string fence(fence_length, c);
    const std::vector<std::string> info = words(fence_end == std::string::npos ? "" : line.substr(fence_end));
    Block block;
    block.fence_line = static_cast<int>(i) + 1;
    std::size_t j = i + 1;
    for (; j < lines.size(); ++j) {
      const std::string t = trim(lines[j]);
      if (t.starts_with(fence) && t.find_first_not_of(c) == std::string::npos) break;
      const std::size_t strip = std::min(indent, std::min(lines[j].size(), lines[j].find_first_not_of(' ')));
      block.lines.push_back(lines[j].substr(strip));
    }
    if (j == lines.size()) die(name, block.fence_line, "code block never closed");
    i = j;
    if (info.empty() || !is_cpp(info[0])) continue;
    for (std::size_t k = 1; k < info.size(); ++k) {
      if (info[k] == "file-scope") block.kind = Kind::file_scope;
      else if (info[k] == "compile-only") block.kind = Kind::compile_only;
      else if (info[k].starts_with("case=") && info[k].size() > 5) block.case_id = info[k].substr(5);
      else die(name, block.fence_line, "unknown code block attribute '" + info[k] + "'");
    }
    if (!block.case_id.empty() && block.kind != Kind::run)
      die(name, block.fence_line, "a case block must be a plain run block");
    page.blocks.push_back(std::move(block));
  }
  return page;
}

std::string identifier(const std::string& s) {
  std::string out;
  for (unsigned char ch : s) out += std::isalnum(ch) ? static_cast<char>(ch) : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out = "_" + out;
  return out;
}

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"' || ch == '\\') out += '\\';
    out += ch;
  }
  return out + "\"";
}

bool is_include(const std::string& line) {
  const std::string t = trim(line);
  return t.starts_with("#") && trim(t.substr(1)).starts_with("include");
}

std::string generate(const std::string& name, const Page& page) {
  std::ostringstream out;
  out << "// Generated from " << name << " by recur_doc_extract (tests/docs/extract_code_blocks.cpp).\n"
      << "// Edit the Markdown, not this file.\n";
  if (page.blocks.empty() && page.case_rows.empty()) return out.str();

  std::vector<std::string> includes{"#include <recur/recur.hpp>"};
  for (const Block& b : page.blocks)
    for (const std::string& line : b.lines)
      if (is_include(line) && std::find(includes.begin(), includes.end(), trim(line)) == includes.end())
        includes.push_back(trim(line));
  for (const std::string& inc : includes) out << inc << "\n";
  out << "\n#include \"doc_block_fixture.hpp\"\n\n"
      << "// The examples check themselves with assert(), in Release too.\n#undef NDEBUG\n#include <cassert>\n\n"
      << "namespace {\nusing namespace recur;\n\n";
  const std::string suite = identifier(name);
  out << "class " << suite << " : public recur::docs::BlockInTempDir {};\n\n";

  std::set<std::string> test_names, cases;
  for (const Block& b : page.blocks) {
    std::string test;
    if (!b.case_id.empty()) {
      if (!cases.insert(b.case_id).second) die(name, b.fence_line, "case '" + b.case_id + "' has two blocks");
      test = identifier(b.case_id);
    } else {
      test = "line_" + std::to_string(b.fence_line);
    }
    if (!test_names.insert(test).second) die(name, b.fence_line, "two blocks make the test name " + test);
    switch (b.kind) {
      case Kind::run: out << "TEST_F(" << suite << ", " << test << ") {\n"; break;
      case Kind::compile_only: out << "[[maybe_unused]] void compile_only_" << test << "() {\n"; break;
      case Kind::file_scope: break;
    }
    out << "#line " << b.fence_line + 1 << " " << quoted(name) << "\n";
    for (const std::string& line : b.lines) out << (is_include(line) ? "" : line) << "\n";
    if (b.kind != Kind::file_scope) out << "}\n";
    out << "\n";
  }

  if (!page.case_rows.empty() || !cases.empty()) {
    std::set<std::string> rows;
    for (const std::string& r : page.case_rows)
      if (!rows.insert(r).second) die(name, 0, "table row '" + r + "' appears twice");
    auto list = [](const std::set<std::string>& s) {
      std::string l;
      for (const std::string& x : s) l += quoted(x) + ", ";
      return l;
    };
    out << "// Every row of the page's \"case\" tables has a block that tests it, and every case\n"
        << "// block has its row.\n"
        << "TEST(" << suite << "_cases, every_table_row_has_a_block) {\n"
        << "  const std::set<std::string> rows{" << list(rows) << "};\n"
        << "  const std::set<std::string> blocks{" << list(cases) << "};\n"
        << "  EXPECT_EQ(rows, blocks);\n"
        << "}\n\n";
  }
  out << "}  // namespace\n";
  return out.str();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::cerr << "usage: recur_doc_extract <page.md> <name shown in messages> <out.cpp>\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  if (!in) die(argv[1], 0, "cannot read the page");
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);) lines.push_back(line);

  const std::string text = generate(argv[2], parse(argv[2], lines));
  // Rewrite only on change, so that the build does not recompile an unchanged test.
  std::ifstream old(argv[3], std::ios::binary);
  if (old && std::string(std::istreambuf_iterator<char>(old), {}) == text) return 0;
  old.close();
  std::ofstream out(argv[3], std::ios::binary | std::ios::trunc);
  out << text;
  if (!out) die(argv[3], 0, "cannot write the test source");
  return 0;
}
