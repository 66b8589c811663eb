#pragma once
// Released ranges: op nodes whose values were dropped to save memory (scan's checkpoints)
// and are recomputed, by replaying each op on its inputs, when a backward pass needs them;
// the pass releases them again when it leaves them behind.
#include <cstdint>
#include <vector>

#include <recur/autodiff/node_store.hpp>

namespace recur::detail {

class Recompute {
 public:
  explicit Recompute(NodeStore& nodes) : nodes_(nodes) {}

  bool empty() const { return ranges_.empty(); }
  // Releases op nodes [begin, end) except `keep`. A range may enclose earlier ones (a
  // checkpointed scan inside another): it replaces them.
  void release(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep);
  // Forgets the ranges that reach past node `size` (the tape drops those nodes).
  void truncate(std::uint32_t size);

  // ---- during a backward pass, which walks the nodes downwards ----------------------------
  // Releases again the recomputed ranges above node `i`: the pass is done with them.
  void release_above(std::uint32_t i);
  // Recomputes the values op node `n` (node `i`) and its inputs need.
  void ensure_node(const Node& n, std::uint32_t i);
  void ensure_inputs(const Node& n);
  // After the pass: every recomputed range is released again.
  void release_all();

 private:
  struct Range {
    std::uint32_t begin, end;
    std::vector<std::uint32_t> keep;  // sorted
    bool materialized = false;
  };
  void ensure_value(std::uint32_t id);
  void rematerialize(Range& range);
  void release(Range& range);

  NodeStore& nodes_;
  std::vector<Range> ranges_;  // sorted by begin, disjoint
};

}  // namespace recur::detail
