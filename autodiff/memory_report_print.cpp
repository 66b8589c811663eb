// Printing a MemoryReport: aligned tables in human units.
#include <recur/autodiff/memory_report.hpp>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <span>
#include <sstream>

namespace recur {
namespace {

// Rows of cells printed as columns, each as wide as its widest cell: text columns
// left-aligned, numbers right-aligned.
class Table {
 public:
  explicit Table(std::vector<bool> left) : left_(std::move(left)) {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void print(std::ostream& os, const std::string& indent) const {
    std::vector<std::size_t> width;
    for (const auto& row : rows_)
      for (std::size_t c = 0; c < row.size(); ++c) {
        if (width.size() <= c) width.push_back(0);
        width[c] = std::max(width[c], row[c].size());
      }
    for (const auto& row : rows_) {
      std::string line = indent;
      for (std::size_t c = 0; c < row.size(); ++c) {
        const std::string pad(width[c] - row[c].size(), ' ');
        line += (c == 0 ? "" : "  ") + (c < left_.size() && left_[c] ? row[c] + pad : pad + row[c]);
      }
      while (!line.empty() && line.back() == ' ') line.pop_back();
      os << line << '\n';
    }
  }

 private:
  std::vector<bool> left_;
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace

std::string format_bytes(std::size_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  static constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB"};
  double value = static_cast<double>(bytes) / 1024;
  std::size_t unit = 0;
  while (value >= 1024 && unit + 1 < std::size(kUnits)) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, "%.1f %s", value, kUnits[unit]);
  return text;
}

std::string MemoryReport::to_string() const {
  std::ostringstream os;
  os << "tape memory: " << nodes << " nodes hold " << format_bytes(held_bytes) << "; backward peaks at "
     << format_bytes(peak_bytes) << " (+ " << format_bytes(gradient_bytes) << " of leaf gradients)\n";
  Table table({true});
  table.add({"op", "nodes", "bytes"});
  for (const OpMemory& op : ops) table.add({op.name, std::to_string(op.nodes), format_bytes(op.bytes)});
  table.add({"total", std::to_string(nodes), format_bytes(held_bytes)});
  table.print(os, "  ");
  if (consumed_nodes > 0)
    os << "  consumed by a backward: " << consumed_nodes << " nodes, " << format_bytes(consumed_bytes)
       << " only they hold (freed with the tape)\n";
  if (!regions.empty()) {
    Table region_table({true, false, true});
    region_table.add({"region", "steps", "policy", "nodes", "bytes", "replay", "step"});
    // A region inside a long loop's step is one per step: the table shows the first ones.
    constexpr std::size_t kMaxRows = 20;
    for (const RegionMemory& r : std::span(regions).first(std::min(regions.size(), kMaxRows)))
      region_table.add({std::string(2 * static_cast<std::size_t>(r.depth), ' ') + r.name, std::to_string(r.steps),
                        r.policy, std::to_string(r.nodes), format_bytes(r.bytes), format_bytes(r.replay_bytes),
                        r.step.substr(0, r.step.find(':'))});
    region_table.print(os, "  ");
    if (regions.size() > kMaxRows) os << "  ... and " << regions.size() - kMaxRows << " more regions\n";
  }
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const MemoryReport& report) { return os << report.to_string(); }

}  // namespace recur
