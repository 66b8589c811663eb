// Tape::memory_report(): one walk over the nodes, charging every buffer once (see
// autodiff/memory_report.hpp for the rule), then the rows by op and by region.
#include <algorithm>
#include <map>
#include <unordered_map>

#include <recur/autodiff/recompute_detail.hpp>
#include <recur/autodiff/tape_access.hpp>

namespace recur {
namespace {

// Who holds one buffer: the node it is charged to, and whether any node a backward may
// still run through (or a leaf) holds it.
struct Holders {
  std::uint32_t first = 0;       // the first node holding any part of it
  std::uint32_t first_whole = 0; // the first whose value covers it whole, if `whole`
  bool whole = false;
  bool live = false;
  std::size_t bytes = 0;
  std::uint32_t charged_to() const { return whole ? first_whole : first; }
};

std::string leaf_kind(const detail::Node& n) {
  if (n.shared_read >= 0) return "(shared read)";
  if (n.leaf_grad >= 0) return "(variable)";
  return "(constant)";
}

// Who holds what. Nodes are visited in recording order, so the first seen is the first.
std::unordered_map<const Storage*, Holders> holders_of(const detail::NodeStore& nodes) {
  std::unordered_map<const Storage*, Holders> holders;
  auto note = [&](const Tensor& t, std::uint32_t i, bool live) {
    if (!t.defined()) return;
    const Storage* s = t.storage().get();
    Holders& h = holders.try_emplace(s, Holders{i, i, false, false, s->bytes()}).first->second;
    if (!h.whole && t.nbytes() == s->bytes()) {
      h.whole = true;
      h.first_whole = i;
    }
    h.live = h.live || live;
  };
  for (std::uint32_t i = 0; i < nodes.size(); ++i) {
    const detail::Node& n = nodes[i];
    const bool live = !(n.op && n.consumed);
    note(n.value, i, live);
    if (n.op)
      for (const Tensor& t : n.op.saved()) note(t, i, live);
  }
  return holders;
}

void add_regions(MemoryReport& report, std::vector<detail::RegionRecord> regions,
                 const std::vector<std::size_t>& charged, const detail::Recompute* recompute) {
  // Recording order: an enclosing region (which begins first, or with its inner one and
  // ends after it) before the regions inside it. A region is noted when it closes, so an
  // inner one is noted first: reversed, a step that is nothing but an inner region (the
  // same nodes) puts the outer first too.
  std::reverse(regions.begin(), regions.end());
  std::stable_sort(regions.begin(), regions.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end > b.end;
  });
  for (std::size_t k = 0; k < regions.size(); ++k) {
    const detail::RegionRecord& r = regions[k];
    RegionMemory s = r.info;
    s.name += " #" + std::to_string(k);
    s.depth = static_cast<int>(std::count_if(regions.begin(), regions.end(), [&](const auto& o) {
      return &o != &r && o.begin <= r.begin && o.end >= r.end && (o.begin < r.begin || o.end > r.end || &o < &r);
    }));
    s.nodes = r.end - r.begin;
    for (std::uint32_t i = r.begin; i < r.end; ++i) s.bytes += charged[i];
    s.replay_bytes = recompute ? recompute->replay_bytes(r.begin, r.end) : 0;
    report.regions.push_back(std::move(s));
  }
}

}  // namespace

MemoryReport Tape::memory_report() const {
  MemoryReport report;
  report.nodes = nodes_.size();
  std::vector<std::size_t> charged(nodes_.size(), 0);
  for (const auto& [storage, h] : holders_of(nodes_)) {
    report.held_bytes += h.bytes;
    charged[h.charged_to()] += h.bytes;
    if (!h.live) report.consumed_bytes += h.bytes;
  }

  std::map<std::string, OpMemory, std::less<>> by_name;
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    const detail::Node& n = nodes_[i];
    std::string name = n.op ? std::string(n.op.name()) : leaf_kind(n);
    OpMemory& row = by_name[name];
    row.name = std::move(name);
    ++row.nodes;
    row.bytes += charged[i];
    if (n.op && n.consumed) ++report.consumed_nodes;
    if (!n.op && n.requires_grad) report.gradient_bytes += n.value.nbytes();
  }
  for (auto& [name, row] : by_name) report.ops.push_back(std::move(row));
  std::stable_sort(report.ops.begin(), report.ops.end(),
                   [](const OpMemory& a, const OpMemory& b) { return a.bytes > b.bytes; });

  add_regions(report, regions_, charged, recompute_.get());
  report.peak_bytes = report.held_bytes + (recompute_ ? recompute_->replay_bytes(0, nodes_.size()) : 0);
  return report;
}

void TapeAccess::note_region(Tape& tape, detail::RegionRecord record) { tape.regions_.push_back(std::move(record)); }

}  // namespace recur
