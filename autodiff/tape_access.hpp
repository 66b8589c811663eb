#pragma once
// TapeAccess: the tape's plumbing, for the code that records on it: record() (autodiff/
// record.hpp), ops that record nodes themselves (random draws), and constructs built on the
// tape (loops over steps: scopes, released ranges, cut gradients). Users call Tape's public
// members.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>
#include <vector>

#include <recur/autodiff/tape.hpp>

namespace recur::detail {
class Chain;
struct ChainPolicy;
struct ChainStats;
}  // namespace recur::detail

namespace recur {

class TapeAccess {
 public:
  // ---- recording ---------------------------------------------------------------------------
  static const Tensor& node_value(const Tape& tape, std::uint32_t id) { return tape.nodes_[id].value; }
  static bool requires_grad(const Tape& tape, std::uint32_t id) { return tape.nodes_[id].requires_grad; }
  static Var push(Tape& tape, Tensor value, std::span<const std::uint32_t> inputs, detail::OpBox op,
                  bool requires_grad) {
    return tape.push(std::move(value), inputs, std::move(op), requires_grad);
  }
  // Output k >= 1 of the multi-output op at node `main` (record_outputs in record.hpp).
  static Var push_output(Tape& tape, Tensor value, std::uint32_t main, std::size_t k);
  static Var handle(const Tape& tape, std::uint32_t id) { return tape.handle(id); }
  static bool owns(const Tape& tape, const Var& v) { return tape.owns(v); }
  // Asks the innermost scope that checks inputs (if any) whether op `op` may use `inputs`.
  static void check_inputs(const Tape& tape, std::string_view op, std::span<const std::uint32_t> inputs) {
    tape.check_inputs(op, inputs);
  }
  // Op node `id` as it describes itself (Tape::describe without the ownership check).
  static std::optional<OpDescription> describe(const Tape& tape, std::uint32_t id) {
    const detail::OpBox& op = tape.nodes_[id].op;
    if (!op) return std::nullopt;
    return OpDescription{op.name(), op.attributes()};
  }
  // Every op node recorded from now on keeps its op, even one that needs no gradient (it
  // still requires none): a loop captures its step from them (ops/scan/step_program_detail.hpp).
  static void keep_all_ops(Tape& tape, bool keep) { tape.keep_all_ops_ = keep; }
  static bool keeps_all_ops(const Tape& tape) { return tape.keep_all_ops_; }
  // Node `id` as stored: its op, inputs and kind of leaf.
  static const detail::Node& node(const Tape& tape, std::uint32_t id) { return tape.nodes_[id]; }
  // The Shared that leaf `id` reads; nullptr when it is not a Shared read.
  static const Shared* shared_read_by(const Tape& tape, std::uint32_t id) {
    const std::int32_t r = tape.nodes_[id].shared_read;
    return r < 0 ? nullptr : &tape.shared_reads_[r].shared;
  }
  // Drops the nodes recorded after the first `size`: how a composite op that fails
  // halfway leaves the tape as it found it (see transactional() in record.hpp).
  static void truncate(Tape& tape, std::uint32_t size) { tape.truncate(size); }

  // ---- gradients ---------------------------------------------------------------------------
  // The gradient backward left in variable leaf `id` (zeros before any).
  static Tensor leaf_grad(const Tape& tape, std::uint32_t id) { return tape.leaf_grad(id); }
  // Gradients reaching op nodes [begin, end) are dropped: truncated BPTT.
  static void cut_gradients(Tape& tape, std::uint32_t begin, std::uint32_t end);

  // ---- memory (autodiff/recompute.cpp) -----------------------------------------------------
  // Releases the values of op nodes in [begin, end) except `keep`; a backward pass that
  // needs them recomputes the range from its inputs (replay), then releases it again.
  static void release_values(Tape& tape, std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep);
  // Drops op node `id`'s buffer, keeping its shape and dtype: the caller knows that no
  // backward rule reads its elements (OpBox::backward_reads of its op and of its readers).
  static void drop_unread_value(Tape& tape, std::uint32_t id);
  static bool value_dropped(const Tape& tape, std::uint32_t id);  // by drop_unread_value
  // A chain of steps from node `begin` on, reversed by revolve with few snapshots
  // (autodiff/revolve_chain_detail.hpp): the loop tells it each step's end and its results.
  static detail::Chain& begin_chain(Tape& tape, std::uint32_t begin, detail::ChainPolicy policy);
  static void drop_chain(Tape& tape, const detail::Chain* chain);  // a loop that failed
  static std::vector<detail::ChainStats> chain_stats(const Tape& tape);
  // Makes node `id` hold `view`, a tensor equal to its value that shares another buffer
  // (a loop points each step's output into the stacked result instead of keeping a copy).
  static void share_value(Tape& tape, std::uint32_t id, const Tensor& view);
  // A construct's region of nodes closed: noted for Tape::memory_report() (memory_report.cpp).
  static void note_region(Tape& tape, detail::RegionRecord record);

  // ---- scopes (autodiff/recording_scope.hpp) -----------------------------------------------
  static void push_scope(Tape& tape, RecordingScope* scope);
  static void pop_scope(Tape& tape);
  // The innermost active scope, nullptr outside any.
  static RecordingScope* innermost_scope(const Tape& tape) {
    return tape.scopes_.empty() ? nullptr : tape.scopes_.back();
  }
};

}  // namespace recur
