#pragma once
// Released ranges: op nodes whose values were dropped to save memory (a loop's checkpoints)
// and are recomputed, by replaying each op on its inputs, when a backward pass needs them;
// the pass releases them again when it leaves them behind.
// Dropped nodes: op nodes whose elements no backward rule reads (OpBox::backward_reads), kept
// as their shape and dtype only (a captured loop's per-step products and input rows). A pass
// that reads them after all (create_graph, a replay) runs their op again and keeps the value.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include <recur/autodiff/node_store.hpp>
#include <recur/autodiff/revolve_chain_detail.hpp>

namespace recur::detail {

// The bytes replaying node `n` allocates again: its value's buffer unless the value is a
// view of an input's (a replayed view is a view again), and the op's saved tensors.
// Measured while the values are still there (before a release drops them).
std::size_t replayed_bytes(const NodeStore& nodes, const Node& n);
// The bytes of node n's op's saved tensors besides its value's buffer.
std::size_t saved_bytes(const Node& n);

class Recompute {
 public:
  explicit Recompute(NodeStore& nodes) : nodes_(nodes) {}
  ~Recompute();

  bool empty() const { return ranges_.empty() && chains_.empty() && dropped_.empty(); }
  // Whether node `id`'s value was dropped as unread (drop_unread), not released.
  bool dropped(std::uint32_t id) const { return id < nodes_.size() && nodes_[id].dropped; }
  // Drops op node `id`'s buffer: its value becomes a Tensor of its shape and dtype, no elements.
  void drop_unread(std::uint32_t id);
  // Releases op nodes [begin, end) except `keep`. A range may enclose earlier ones (a
  // checkpointed loop inside another): it replaces them.
  void release(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep);
  // A chain of steps from node `begin` on, reversed by revolve (autodiff/revolve_chain_detail.hpp).
  // It lives until the tape drops its nodes or an enclosing range replaces it.
  Chain& add_chain(std::uint32_t begin, ChainPolicy policy);
  void remove_chain(const Chain* chain);
  std::vector<ChainStats> chain_stats() const;
  // Forgets the ranges and chains inside [begin, end) (an enclosing step replays them whole);
  // returns the bytes their recomputation would have allocated (the encloser's now).
  std::size_t forget_inside(std::uint32_t begin, std::uint32_t end, const Chain* except = nullptr);
  // The most bytes one recomputation inside nodes [begin, end) adds during backward (see
  // RegionMemory::replay_bytes); ranges and chains a backward consumed whole count 0.
  std::size_t replay_bytes(std::uint32_t begin, std::uint32_t end) const;
  // Forgets the ranges that reach past node `size` (the tape drops those nodes).
  void truncate(std::uint32_t size) noexcept;

  // ---- during a backward pass, which walks the nodes downwards ----------------------------
  // Releases again the recomputed ranges above node `i`: the pass is done with them.
  void release_above(std::uint32_t i);
  // Recomputes the values op node `n` (node `i`) and its inputs need: with `all`, every
  // value (create_graph runs rules on Vars), else a dropped value only where its rule reads it.
  // Inline where nothing is missing (every node of a full tape with dropped values).
  void ensure_node(const Node& n, std::uint32_t i, bool all) {
    if (!chains_.empty() || (n.op && !n.value.defined()) || !inputs_defined(n)) ensure_node_slow(n, i, all);
  }
  // After a rule: only a released value (a range's, a chain's) lost its shape, which the
  // rule's gradients are checked against; a dropped one keeps it.
  void ensure_inputs(const Node& n, bool all) {
    if ((!ranges_.empty() || !chains_.empty()) && !inputs_defined(n)) ensure_inputs_slow(n, all);
  }
  // After the pass: every recomputed range is released again.
  void release_all();
  // The value of node `id`, recomputed when it was released.
  void ensure_value(std::uint32_t id);

 private:
  struct Range {
    std::uint32_t begin, end;
    std::vector<std::uint32_t> keep;  // sorted
    bool materialized = false;
    bool measured = false;         // replay_bytes is known (set at the first release)
    std::size_t replay_bytes = 0;  // what rematerializing the range allocates
  };
  bool all_consumed(std::uint32_t begin, std::uint32_t end) const;
  Chain* chain_of(std::uint32_t id);
  bool inputs_defined(const Node& n) const {
    for (std::uint32_t in : n.inputs)
      if (!nodes_[in].value.defined()) return false;
    return true;
  }
  void ensure_node_slow(const Node& n, std::uint32_t i, bool all);
  void ensure_inputs_slow(const Node& n, bool all);
  void undrop(std::uint32_t id);
  void rematerialize(Range& range);
  void release(Range& range);

  NodeStore& nodes_;
  std::vector<Range> ranges_;  // sorted by begin, disjoint
  std::vector<std::unique_ptr<Chain>> chains_;
  std::vector<std::uint32_t> dropped_;  // sorted; each has Node::dropped set
};

}  // namespace recur::detail
