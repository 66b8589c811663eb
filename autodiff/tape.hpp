#pragma once
// Tape: the record of one computation, nodes in creation order. Creation order is already
// a topological order, so backward is a single reverse loop over the nodes (no recursion,
// no sorting), and destroying a tape frees its nodes in one sweep, however deep the graph.
//
// Tapes are scoped objects: make one per training step (or per thread); the innermost live
// tape of a thread is its current tape, on which Shared and Tensor values become Vars.
//
// A backward pass consumes the graph it runs through, as in PyTorch: a second backward
// that would run an op's backward rule again throws, instead of adding the same gradients
// into the leaves a second time, unless the earlier pass kept the graph (retain_graph).
//
// This is the face users call. Code that records ops, and constructs built on the tape
// (loops over steps, recomputed ranges), go through autodiff/tape_access.hpp.
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <recur/autodiff/memory_report.hpp>
#include <recur/autodiff/node_store.hpp>
#include <recur/autodiff/op_attributes.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/non_copyable.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

class RecordingScope;
class TapeAccess;
namespace detail {
class Recompute;
}

struct GradOptions {
  bool create_graph = false;  // record the backward pass, so the gradients can be differentiated
};

struct BackwardOptions {
  // Keep the graph for another backward through it (PyTorch's retain_graph): this pass
  // consumes nothing, and a later backward may run through the same ops again (and add
  // their gradients again, which is then what is asked for).
  bool retain_graph = false;
};

// An op on the tape as it describes itself: its name and parameters (attributes is nullopt
// for an op that does not say what its data members are: a user's op may not).
struct OpDescription {
  std::string_view op;
  std::optional<OpAttributes> attributes;
};

class Tape : NonCopyable {
 public:
  Tape();
  ~Tape();

  // The innermost live tape of the calling thread; TapeError when there is none.
  static Tape& current();

  Var constant(Tensor value);  // a value no gradient flows to
  Var variable(Tensor value);  // a leaf that receives a gradient from backward()
  Var read(const Shared& shared);

  // Gradient of a scalar `loss` (or of `output` weighted by grad_output) accumulated into
  // every Shared read on this tape and every variable leaf (Var::grad()).
  //
  // The pass consumes every op node whose backward rule it runs (those on the way from
  // the output to the leaves, above any truncated-BPTT cut), unless options.retain_graph.
  // A later backward whose way down meets a consumed node throws GradientError naming it,
  // before anything is accumulated. Leaves are never consumed, and ops recorded after a
  // backward are new: a tape may go on recording and take a backward of a new loss built
  // from fresh ops (two losses over one shared parameter read, each backward once, is
  // fine). A pass that throws half-way keeps the nodes whose rules ran consumed, since it
  // already delivered their gradients.
  void backward(const Var& loss, BackwardOptions options = {});
  void backward(const Var& output, const Tensor& grad_output, BackwardOptions options = {});

  // d(sum_k <outputs[k], grad_outputs[k]>) / d inputs. Without grad_outputs every output
  // must be a scalar. With create_graph the results are recorded on this tape and can be
  // differentiated again; otherwise they are constants. Nothing is accumulated anywhere,
  // so grad() neither consumes the graph nor minds a consumed one: it may be called any
  // number of times, before or after backward, with the same results. (A backward through
  // gradients recorded with create_graph runs through the forward ops as well: after a
  // backward of the forward's own loss, that backward needs retain_graph.)
  std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                        std::span<const Tensor> grad_outputs = {}, GradOptions options = {});

  std::uint32_t size() const { return nodes_.size(); }
  // The op that made `v` and its parameters (autodiff/op_attributes.hpp): nullopt for a
  // leaf, a constant, or a node that kept no op (recorded under NoGrad, or with no input
  // needing a gradient). TapeError when `v` is not of this tape.
  std::optional<OpDescription> describe(const Var& v) const;
  // Bytes of the distinct buffers the tape's nodes hold (what backward will need).
  std::size_t bytes_held() const;
  // Those bytes by op and by region, and the most backward will hold (autodiff/memory_report.hpp).
  // Walks the nodes when called; nothing is tracked for it while recording.
  MemoryReport memory_report() const;

 private:
  friend class TapeAccess;
  friend class Var;  // Var::tape() checks that its node was not dropped

  struct SharedRead {
    std::uint32_t node;
    Shared shared;
    std::uint64_t version;
  };
  struct LeafGrad {
    std::uint32_t node;
    Tensor grad;  // undefined until a backward reaches the leaf
  };

  // ---- recording (tape.cpp) --------------------------------------------------------------
  Var push(Tensor value, std::span<const std::uint32_t> inputs, detail::OpBox op, bool requires_grad);
  Var handle(std::uint32_t id) const { return Var(slot_, id, serial_, epoch_); }
  bool owns(const Var& v) const { return v.slot_ == slot_ && v.tape_serial() == serial_; }
  void truncate(std::uint32_t size) noexcept;
  // TapeError when v's node was dropped (truncate) after v was made: its place may hold
  // another node now. Called by Var::tape() when v is older than the last drop.
  void check_not_dropped(const Var& v) const;
  // Appends `entry` (node `node`'s leaf-gradient or Shared-read entry); if memory runs out,
  // node `node` and what follows it are dropped and a MemoryError thrown.
  template <class List>
  void append_or_roll_back(List& list, typename List::value_type entry, std::uint32_t node);
  // One branch while no scope checks inputs (see autodiff/recording_scope.hpp).
  void check_inputs(std::string_view op, std::span<const std::uint32_t> inputs) const {
    if (checking_scopes_ > 0) check_inputs_in_scope(op, inputs);
  }
  void check_inputs_in_scope(std::string_view op, std::span<const std::uint32_t> inputs) const;
  const RecordingScope* innermost_checking_scope() const;
  Tensor leaf_grad(std::uint32_t id) const;
  // The released ranges, or nullptr when there are none: a pass checks this once.
  detail::Recompute* released_ranges() const;

  // ---- reverse pass (backward.cpp: argument checks; propagate.cpp: the loop) --------------
  void check_versions(std::string_view op, std::span<const Var> outputs) const;
  void check_not_consumed(const Var& output) const;
  void backward_to_leaves(const Var& output, const Tensor& grad_output, bool retain_graph);
  std::vector<Var> grad_of_inputs(std::span<const Var> outputs, std::span<const Var> inputs,
                                  std::span<const Tensor> seeds, std::uint32_t lo, std::uint32_t hi,
                                  bool create_graph);
  template <class Mode>
  void propagate(Mode& mode, std::uint32_t lo, std::uint32_t hi);
  void accumulate_into_leaf(const detail::Node& n, const Tensor& g);
  void consume(std::uint32_t id);

  detail::NodeStore nodes_;
  std::vector<SharedRead> shared_reads_;
  std::vector<LeafGrad> leaf_grads_;
  std::unique_ptr<detail::Recompute> recompute_;  // created by the first released range
  std::vector<detail::RegionRecord> regions_;     // one per closed region, for memory_report()
  std::vector<RecordingScope*> scopes_;           // innermost last
  int checking_scopes_ = 0;
  bool keep_all_ops_ = false;  // every op node keeps its op, needed or not (a loop capturing its step)
  std::uint32_t lowest_consumed_ = UINT32_MAX;  // no node at or below an output consumed: no check
  std::uint32_t slot_ = 0;
  std::uint64_t serial_ = 0;
  // Drops of nodes (truncate): epoch_ counts them (saturating at what a Var holds); a Var
  // made in epoch e names a dropped node when its id is at or above the smallest size a later
  // drop left. `drops_` keeps just what answers that: (epoch, size) with both increasing, a
  // drop removing the earlier ones it undercuts.
  struct Drop {
    std::uint32_t epoch, size;
  };
  std::uint32_t epoch_ = 0;
  std::vector<Drop> drops_;
};

// Free-function forms, on the tape of their argument.
void backward(const Var& loss, BackwardOptions options = {});
std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                      std::span<const Tensor> grad_outputs = {}, GradOptions options = {});
Var grad(const Var& output, const Var& input, GradOptions options = {});
// The same value as v, cut off from the graph: no gradient flows back through it.
Var detach(const Var& v);

}  // namespace recur
