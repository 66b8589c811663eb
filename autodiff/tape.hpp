#pragma once
// Tape: the record of one computation, nodes in creation order. Creation order is already
// a topological order, so backward is a single reverse loop over the nodes (no recursion,
// no sorting), and destroying a tape frees its nodes in one sweep, however deep the graph.
//
// Tapes are scoped objects: make one per training step (or per thread); the innermost live
// tape of a thread is its current tape, on which Shared and Tensor values become Vars.
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include <boost/container/small_vector.hpp>

#include <recur/autodiff/op_box.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

struct GradOptions {
  bool create_graph = false;  // record the backward pass, so the gradients can be differentiated
};

// What a running scan tells the tape: where its nodes start, which Shared values it has
// updated so far (reads see the update, not the stored value) and, under `strict`, which
// outer nodes and Shared values its step function may use.
struct ScanScope {
  std::uint32_t begin = 0;
  bool strict = false;
  std::vector<std::uint32_t> allowed;                        // outer node ids (strict)
  std::vector<std::pair<const void*, std::uint32_t>> overrides;  // Shared identity -> node
  // Updates made by code running inside the step instead of returned by it (a random
  // stream's state, ops/random_stream.hpp); the engine merges them into the step's updates.
  std::vector<std::pair<Shared, Var>> implicit_updates;

  // Later reads of `shared` inside the scan see node `node`.
  void set_override(const Shared& shared, std::uint32_t node);
  // An implicit update: later reads see `value`, and the scan returns it in its updates.
  void update(const Shared& shared, const Var& value);
};

namespace detail {
struct Node {
  Tensor value;
  boost::container::small_vector<std::uint32_t, 2> inputs;
  OpBox op;                      // empty for leaves and constants
  std::int32_t shared_read = -1;  // index into the tape's shared reads for Shared leaves
  bool requires_grad = false;
  bool is_variable = false;       // a leaf made by Tape::variable
  bool cut = false;               // gradients reaching this node are dropped (truncated BPTT)
};

// Nodes in chunks that never move, so an op may record new nodes (create_graph) while its
// own node is being read.
class NodeStore {
 public:
  static constexpr std::uint32_t kChunkBits = 8, kChunk = 1u << kChunkBits;
  NodeStore() = default;
  NodeStore(const NodeStore&) = delete;
  NodeStore& operator=(const NodeStore&) = delete;
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
}  // namespace detail

class Tape {
 public:
  Tape();
  ~Tape();
  Tape(const Tape&) = delete;
  Tape& operator=(const Tape&) = delete;

  // The innermost live tape of the calling thread; TapeError when there is none.
  static Tape& current();

  Var constant(Tensor value);  // a value no gradient flows to
  Var variable(Tensor value);  // a leaf that receives a gradient from backward()
  Var read(const Shared& shared);

  // Gradient of a scalar `loss` (or of `output` weighted by grad_output) accumulated into
  // every Shared read on this tape and every variable leaf (Var::grad()).
  void backward(const Var& loss);
  void backward(const Var& output, const Tensor& grad_output);

  // d(sum_k <outputs[k], grad_outputs[k]>) / d inputs. Without grad_outputs every output
  // must be a scalar. With create_graph the results are recorded on this tape and can be
  // differentiated again; otherwise they are constants. Nothing is accumulated anywhere.
  std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                        std::span<const Tensor> grad_outputs = {}, GradOptions options = {});

  std::uint32_t size() const { return nodes_.size(); }
  // Bytes of the distinct buffers the tape's nodes hold (what backward will need).
  std::size_t bytes_held() const;

  // For op recording (see autodiff/record.hpp).
  const Tensor& node_value(std::uint32_t id) const { return nodes_[id].value; }
  bool requires_grad(std::uint32_t id) const { return nodes_[id].requires_grad; }
  Var push(Tensor value, std::span<const std::uint32_t> inputs, detail::OpBox op, bool requires_grad);
  Var handle(std::uint32_t id) const { return Var(slot_, id, serial_); }
  bool owns(const Var& v) const { return v.slot_ == slot_ && v.serial_ == serial_; }
  Tensor leaf_grad(std::uint32_t id) const;
  // Drops the nodes recorded after the first `size`: how a composite op that fails
  // halfway leaves the tape as it found it (see transactional() in record.hpp).
  void truncate(std::uint32_t size);

  // ---- for scan (ops/scan) -------------------------------------------------------------
  // Gradients reaching nodes [begin, end) are dropped: truncated BPTT.
  void cut_gradients(std::uint32_t begin, std::uint32_t end);
  // Releases the values of op nodes in [begin, end) except `keep`; a backward pass that
  // needs them recomputes the segment from its inputs (replay), then releases it again.
  void release_values(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep);
  // Makes node `id` hold `view`, a tensor equal to its value that shares another buffer
  // (scan points each step's output into the stacked result instead of keeping a copy).
  void share_value(std::uint32_t id, const Tensor& view);
  void push_scope(ScanScope* scope);
  void pop_scope();
  // The innermost running scan on this tape, nullptr outside any scan.
  ScanScope* innermost_scope() const { return scopes_.empty() ? nullptr : scopes_.back(); }
  // Under a strict scope: throws ValueError when an input of `op` is an outer node that
  // was not passed to the scan.
  void check_strict(std::string_view op, std::span<const std::uint32_t> inputs) const {
    if (strict_scopes_ > 0) check_strict_slow(op, inputs);
  }

 private:
  struct SharedRead {
    std::uint32_t node;
    Shared shared;
    std::uint64_t version;
  };
  template <class G>
  void propagate(std::vector<G>& grads, std::uint32_t lo, std::uint32_t hi,
                 const std::vector<std::int32_t>& keep, std::vector<G>* kept, bool to_leaves);
  void check_versions(std::string_view op, std::span<const Var> outputs) const;
  void check_owned(std::string_view op, std::string_view what, const Var& v) const;

  struct Segment {
    std::uint32_t begin, end;
    std::vector<std::uint32_t> keep;  // sorted
    bool materialized = false;
  };
  void ensure_value(std::uint32_t id);
  void rematerialize(Segment& seg);
  void release(Segment& seg);
  void release_segments_above(std::uint32_t i);
  void check_strict_slow(std::string_view op, std::span<const std::uint32_t> inputs) const;

  detail::NodeStore nodes_;
  std::vector<SharedRead> shared_reads_;
  std::vector<Segment> segments_;  // sorted by begin, disjoint
  std::vector<ScanScope*> scopes_;
  int strict_scopes_ = 0;
  std::vector<std::pair<std::uint32_t, Tensor>> leaf_grads_;
  std::uint32_t slot_ = 0;
  std::uint64_t serial_ = 0;
};

// Free-function forms, on the tape of their argument.
void backward(const Var& loss);
std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                      std::span<const Tensor> grad_outputs = {}, GradOptions options = {});
Var grad(const Var& output, const Var& input, GradOptions options = {});
// The same value as v, cut off from the graph: no gradient flows back through it.
Var detach(const Var& v);

}  // namespace recur
