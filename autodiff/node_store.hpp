#pragma once
// The tape's nodes, in creation order. Part of the recording plumbing (autodiff/tape_access.hpp):
// Tape holds them by value so that reading a node's value while recording stays inline.
#include <cstdint>
#include <vector>

#include <recur/autodiff/op_box.hpp>
#include <recur/core/non_copyable.hpp>
#include <recur/core/small_vector.hpp>
#include <recur/core/tensor.hpp>

namespace recur::detail {

struct Node {
  Tensor value;
  boost::container::small_vector<std::uint32_t, 2> inputs;
  OpBox op;                       // empty for leaves and constants
  std::int32_t shared_read = -1;  // a Shared read: index into the tape's shared reads
  std::int32_t leaf_grad = -1;    // a variable (Tape::variable): index into the tape's leaf gradients
  bool requires_grad = false;
  bool cut = false;               // gradients reaching this node are dropped (truncated BPTT)
  bool consumed = false;          // a backward without retain_graph ran this node's rule
  bool dropped = false;           // its value was dropped as unread (Recompute::drop_unread)
  // k > 0: output k of the multi-output op at inputs[0] (record_outputs, autodiff/record.hpp);
  // no op of its own: backward hands its gradient to that op's rule.
  std::uint8_t output = 0;
};

// Nodes in chunks that never move, so an op may record new nodes (create_graph) while its
// own node is being read.
class NodeStore : NonCopyable {
 public:
  static constexpr std::uint32_t kChunkBits = 8, kChunk = 1u << kChunkBits;
  NodeStore() = default;
  ~NodeStore();
  std::uint32_t size() const { return size_; }
  Node& operator[](std::uint32_t i) { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  const Node& operator[](std::uint32_t i) const { return chunks_[i >> kChunkBits][i & (kChunk - 1)]; }
  Node& emplace();
  void pop_back();

 private:
  std::vector<Node*> chunks_;
  std::uint32_t size_ = 0;
};

}  // namespace recur::detail
