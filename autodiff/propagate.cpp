// The reverse pass: one loop down the nodes, calling each op's backward rule, in one of
// two modes. TensorMode is plain backward (gradients are values); VarMode records the
// pass on the tape (grad with create_graph), so gradients can be differentiated again.
#include <algorithm>
#include <cstring>
#include <atomic>
#include <optional>
#include <unordered_set>

#include <recur/autodiff/backward_observer.hpp>
#include <recur/autodiff/recompute_detail.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/elementwise.hpp>

namespace recur {
namespace {

// Gradient accumulation recorded under create_graph: a + b, gradient passed to both.
struct AccumulateGrads {
  static constexpr std::string_view name = "accumulate_grads";
  Tensor forward(const Tensor& a, const Tensor& b) const { return add_tensors(name, a, b); }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {a.grad, a.grad};
  }
};

bool is_defined(const Tensor& t) { return t.defined(); }
bool is_defined(const Var& v) { return v.defined(); }
void accumulate(Tensor& acc, Tensor g) { accumulate_into(acc, std::move(g)); }  // a first gradient: taken
void accumulate(Var& acc, Var g) { acc = acc.defined() ? record(AccumulateGrads{}, acc, g) : std::move(g); }
template <class G>
G from_tensor(Tape& tape, Tensor t);
template <>
Tensor from_tensor<Tensor>(Tape&, Tensor t) { return t; }
template <>
Var from_tensor<Var>(Tape& tape, Tensor t) { return tape.constant(std::move(t)); }
Var as_result(Tape& tape, const Tensor& g) { return tape.constant(g); }
Var as_result(Tape&, const Var& g) { return g; }

// What both modes track: the gradient reaching each node so far and, for grad(), the
// gradients of the nodes it asked for, kept as the pass goes by them.
template <class G>
class PassGrads {
 public:
  using Grad = G;
  PassGrads(Tape& tape, std::uint32_t hi) : tape_(tape), grads_(hi + 1) {}

  bool reached(std::uint32_t i) const { return is_defined(grads_[i]) || (!more_.empty() && find_more(i) < more_.size()); }
  G take(std::uint32_t i) {
    G g = std::move(grads_[i]);
    grads_[i] = G();
    if (!kept_slot_.empty() && kept_slot_[i] >= 0) kept_[kept_slot_[i]] = g;
    return g;
  }
  void add(std::uint32_t i, G g) { accumulate(grads_[i], std::move(g)); }
  // The gradient of output k >= 1 of the multi-output op at node `main`, for its rule.
  void add_more(std::uint32_t main, std::size_t k, G g) {
    std::size_t at = find_more(main);
    if (at == more_.size()) more_.emplace_back(main, Grads<G>{});
    Grads<G>& more = more_[at].second;
    if (more.size() < k) more.resize(k);
    accumulate(more[k - 1], std::move(g));
  }
  Grads<G> take_more(std::uint32_t main) {
    if (more_.empty()) return {};
    const std::size_t at = find_more(main);
    if (at == more_.size()) return {};
    Grads<G> more = std::move(more_[at].second);
    more_.erase(more_.begin() + static_cast<std::ptrdiff_t>(at));
    return more;
  }
  void seed(std::uint32_t i, Tensor g) { add(i, from_tensor<G>(tape_, std::move(g))); }
  G zeros_like(std::uint32_t i) const {
    const Tensor& v = TapeAccess::node_value(tape_, i);
    return from_tensor<G>(tape_, zeros(v.shape(), v.dtype()));
  }

  // grad(): keep the gradients of `inputs` (those at or below hi) as the pass reaches them.
  void keep_gradients_of(std::span<const Var> inputs) {
    kept_slot_.assign(grads_.size(), -1);
    for (const auto& in : inputs)
      if (in.id() < grads_.size() && kept_slot_[in.id()] < 0) {
        kept_slot_[in.id()] = static_cast<std::int32_t>(kept_.size());
        kept_.emplace_back();
      }
  }
  // After the pass: one Var per input, zeros for an input no gradient reached.
  std::vector<Var> gradients_of(std::span<const Var> inputs) const {
    std::vector<Var> result;
    for (const auto& in : inputs) {
      const std::int32_t slot = in.id() < grads_.size() ? kept_slot_[in.id()] : -1;
      if (slot >= 0 && is_defined(kept_[slot])) result.push_back(as_result(tape_, kept_[slot]));
      else result.push_back(tape_.constant(zeros(in.shape(), in.dtype())));
    }
    return result;
  }

 protected:
  Tape& tape_;
  std::vector<G> grads_;
  std::vector<std::int32_t> kept_slot_;  // node -> index into kept_, -1 when not asked for
  std::vector<G> kept_;
  // Multi-output op node -> its other outputs' gradients. An entry lives from the pass
  // reaching one of the op's later outputs (nodes right after it) to the op itself, so a
  // few are pending at a time: a list, not a map (a loop's chain has one per step).
  std::vector<std::pair<std::uint32_t, Grads<G>>> more_;
  std::size_t find_more(std::uint32_t main) const {  // more_.size() when it has no entry
    for (std::size_t k = more_.size(); k-- > 0;)
      if (more_[k].first == main) return k;
    return more_.size();
  }
};

// Gradients handed out by rows before they were zeroed (GradSink::dense_rows): per node, the
// rows [lo, hi) of axis 0 that no rule wrote yet and that hold whatever the buffer held. A
// loop's steps write their rows last first, so a range shrinks from its end; what is left is
// zeroed (settle) before anything else reads or adds to the gradient.
class UnwrittenRows {
 public:
  // acc (node id's gradient, just made and not zeroed) has every row unwritten.
  void start(std::uint32_t id, const Tensor& acc) {
    if (acc.rank() > 0 && acc.size(0) > 0) ranges_.push_back({id, 0, acc.size(0)});
  }
  // Whether rows [begin, end) of acc (node id's gradient) are unwritten, and now taken by a
  // rule that writes them. Rows inside the range but not at either end: the range is zeroed
  // (the rule adds, as to any gradient).
  bool take(std::uint32_t id, Tensor& acc, std::int64_t begin, std::int64_t end) {
    const std::size_t at = find(id);
    if (at == ranges_.size() || begin >= end) return false;
    Range& r = ranges_[at];
    if (end <= r.lo || begin >= r.hi) return false;  // written (or zeroed) rows
    const bool inside = begin >= r.lo && end <= r.hi;
    if (inside && end == r.hi) r.hi = begin;
    else if (inside && begin == r.lo) r.lo = end;
    else {
      settle(id, acc);
      return false;
    }
    if (r.lo >= r.hi) ranges_.erase(ranges_.begin() + static_cast<std::ptrdiff_t>(at));
    return true;
  }
  // Zeroes node id's unwritten rows of acc, and forgets them.
  void settle(std::uint32_t id, Tensor& acc) {
    if (ranges_.empty()) return;
    const std::size_t at = find(id);
    if (at == ranges_.size()) return;
    const Range r = ranges_[at];
    ranges_.erase(ranges_.begin() + static_cast<std::ptrdiff_t>(at));
    const std::size_t row = acc.nbytes() / static_cast<std::size_t>(acc.size(0));
    std::memset(static_cast<char*>(acc.raw_data()) + static_cast<std::size_t>(r.lo) * row, 0,
                static_cast<std::size_t>(r.hi - r.lo) * row);
  }

 private:
  struct Range {
    std::uint32_t id;
    std::int64_t lo, hi;
  };
  std::size_t find(std::uint32_t id) const {  // ranges_.size() when it has none
    for (std::size_t k = 0; k < ranges_.size(); ++k)
      if (ranges_[k].id == id) return k;
    return ranges_.size();
  }
  std::vector<Range> ranges_;  // a few at a time: one per sequence a loop's steps read
};

void check_gradient(const detail::Node& n, std::size_t input, const Tensor& in_value, const Tensor& g);

// Plain backward's GradSink: hands out the accumulated gradient of one node's inputs.
class InputGrads final : public detail::GradSink {
 public:
  InputGrads(std::vector<Tensor>& grads, UnwrittenRows& unwritten, const Tape& tape, const detail::Node& node,
             std::uint64_t pass)
      : grads_(grads), unwritten_(unwritten), tape_(tape), node_(node), pass_(pass) {}
  std::uint64_t pass() const override { return pass_; }
  Tensor& dense(std::size_t input) override {
    Tensor& acc = own(input, false);
    unwritten_.settle(node_.inputs[input], acc);
    return acc;
  }
  Tensor& dense_rows(std::size_t input, std::int64_t begin, std::int64_t end, bool& fresh) override {
    Tensor& acc = own(input, true);
    fresh = unwritten_.take(node_.inputs[input], acc, begin, end);
    return acc;
  }
  void add(std::size_t input, Tensor g) override {
    const std::uint32_t id = node_.inputs[input];
    check_gradient(node_, input, TapeAccess::node_value(tape_, id), g);
    Tensor& acc = grads_[id];
    if (acc.defined()) unwritten_.settle(id, acc);
    accumulate(acc, std::move(g));
  }

 private:
  // The input's gradient, made (zeroed, or with every row unwritten) where none reached it
  // yet, copied where another tensor shares its buffer.
  Tensor& own(std::size_t input, bool by_rows) {
    const std::uint32_t id = node_.inputs[input];
    Tensor& acc = grads_[id];
    const Tensor& x = TapeAccess::node_value(tape_, id);
    if (acc.defined()) {
      if (!acc.storage()->unique()) acc = acc.clone();
    } else if (by_rows) {
      acc = Tensor::empty(x.shape(), x.dtype());
      unwritten_.start(id, acc);
    } else {
      acc = zeros(x.shape(), x.dtype());
    }
    return acc;
  }
  std::vector<Tensor>& grads_;
  UnwrittenRows& unwritten_;
  const Tape& tape_;
  const detail::Node& node_;
  std::uint64_t pass_;
};

// A number no other backward pass of the process has.
std::uint64_t new_pass() {
  static std::atomic<std::uint64_t> passes{0};
  return ++passes;
}

// Tells a BackwardObserver when each Shared's gradient is final: once the loop is below the
// lowest node reading it. `lowest` lists (node, Shared) in descending node order.
class FinalGradients {
 public:
  FinalGradients(BackwardObserver& observer, std::vector<std::pair<std::uint32_t, Shared>> lowest)
      : observer_(observer), lowest_(std::move(lowest)) {}
  // The loop is about to handle node i: everything read only above it is final.
  void passing(std::uint32_t i) {
    while (next_ < lowest_.size() && lowest_[next_].first > i) observer_.gradient_final(lowest_[next_++].second);
  }
  void after_rule() { observer_.between_nodes(); }
  void done() {
    while (next_ < lowest_.size()) observer_.gradient_final(lowest_[next_++].second);
  }

 private:
  BackwardObserver& observer_;
  std::vector<std::pair<std::uint32_t, Shared>> lowest_;
  std::size_t next_ = 0;
};

// Plain backward: rules run on the node values; backward() (to_leaves) also hands the
// gradients reaching leaves to the Shared reads and variables and, unless it retains the
// graph, consumes the nodes whose rules ran.
class TensorMode : public PassGrads<Tensor> {
 public:
  TensorMode(Tape& tape, std::uint32_t hi, bool to_leaves, bool consumes, FinalGradients* finals = nullptr)
      : PassGrads(tape, hi), to_leaves_(to_leaves), consumes_(consumes), finals_(finals), pass_(new_pass()) {}
  // Rules on values read what their ops say they read (OpBox::backward_reads).
  static constexpr bool kReadsAll = false;
  bool consumes() const { return consumes_; }
  void passing(std::uint32_t i) {
    if (finals_) finals_->passing(i);
  }
  void after_rule() {
    if (finals_) finals_->after_rule();
  }
  void done() {
    if (finals_) finals_->done();
  }

  // A gradient's unwritten rows are zeroed before the pass reads it or adds to it.
  Tensor take(std::uint32_t i) {
    if (grads_[i].defined()) unwritten_.settle(i, grads_[i]);
    return PassGrads::take(i);
  }
  void add(std::uint32_t i, Tensor g) {
    if (grads_[i].defined()) unwritten_.settle(i, grads_[i]);
    PassGrads::add(i, std::move(g));
  }

  template <class Deliver>
  void at_leaf(const Tensor& g, Deliver&& deliver) const {
    if (to_leaves_) deliver(g);
  }
  Grads<Tensor> backward(const detail::Node& n, std::uint32_t, const Tensor& g, std::span<const std::uint8_t> needs,
                         std::span<const Tensor> more) {
    boost::container::small_vector<const Tensor*, 4> inputs;
    for (std::uint32_t in : n.inputs) inputs.push_back(&TapeAccess::node_value(tape_, in));
    InputGrads sink(grads_, unwritten_, tape_, n, pass_);
    return n.op.backward(
        BackwardArgs<Tensor>{g, InputList<Tensor>(inputs.data(), inputs.size()), n.value, needs, &sink, more});
  }

 private:
  bool to_leaves_, consumes_;
  FinalGradients* finals_;
  std::uint64_t pass_;
  UnwrittenRows unwritten_;
};

// create_graph: rules run on Vars, so what they compute is recorded on the tape.
class VarMode : public PassGrads<Var> {
 public:
  using PassGrads::PassGrads;
  static constexpr bool consumes() { return false; }  // grad() accumulates nowhere
  static constexpr bool kReadsAll = true;  // rules on Vars may read any value
  static void passing(std::uint32_t) {}  // nothing is delivered, so nothing to observe
  static void after_rule() {}
  static void done() {}

  template <class Deliver>
  void at_leaf(const Var&, Deliver&&) const {}
  Grads<Var> backward(const detail::Node& n, std::uint32_t i, const Var& g, std::span<const std::uint8_t> needs,
                      std::span<const Var> more) {
    boost::container::small_vector<Var, 4> handles;
    for (std::uint32_t in : n.inputs) handles.push_back(TapeAccess::handle(tape_, in));
    boost::container::small_vector<const Var*, 4> inputs;
    for (const Var& h : handles) inputs.push_back(&h);
    const Var out = TapeAccess::handle(tape_, i);
    return n.op.backward(BackwardArgs<Var>{g, InputList<Var>(inputs.data(), inputs.size()), out, needs, nullptr, more});
  }
};

void check_gradient(const detail::Node& n, std::size_t input, const Tensor& in_value, const Tensor& g) {
  if (g.shape() != in_value.shape() || g.dtype() != in_value.dtype())
    fail<GradientError>(n.op.name(), "backward produced a ", g.dtype(), " gradient of shape ", to_string(g.shape()),
                        " for input ", input, " of ", in_value.dtype(), " shape ", to_string(in_value.shape()));
}

}  // namespace

template <class Mode>
void Tape::propagate(Mode& mode, std::uint32_t lo, std::uint32_t hi) {
  detail::Recompute* const released = released_ranges();  // nullptr: no recomputation at all
  for (std::uint32_t i = hi + 1; i-- > lo;) {
    if (released) released->release_above(i);
    mode.passing(i);
    if (!mode.reached(i)) continue;
    auto g = mode.take(i);
    const detail::Node& n = nodes_[i];
    if (n.output > 0) {  // another output of a multi-output op: that op's rule takes its gradient
      if (!n.cut) mode.add_more(n.inputs[0], n.output, std::move(g));
      continue;
    }
    if (!n.op) {  // leaves (Shared reads) receive their gradient even below a cut
      mode.at_leaf(g, [&](const Tensor& t) { accumulate_into_leaf(n, t); });
      continue;
    }
    if (n.cut) continue;
    if (released) released->ensure_node(n, i, Mode::kReadsAll);
    const auto more = mode.take_more(i);
    if (!is_defined(g)) g = mode.zeros_like(i);  // only its other outputs' gradients reached the op
    boost::container::small_vector<std::uint8_t, 4> needs;
    for (std::uint32_t in : n.inputs) needs.push_back(in >= lo && nodes_[in].requires_grad);
    auto gs = mode.backward(n, i, g, std::span<const std::uint8_t>(needs.data(), needs.size()),
                            std::span(more.data(), more.size()));
    if (mode.consumes()) consume(i);
    mode.after_rule();
    if (released) released->ensure_inputs(n, Mode::kReadsAll);  // a rule that ran a pass of its own may have released them
    for (std::size_t j = 0; j < needs.size() && j < gs.size(); ++j) {
      if (!needs[j] || !is_defined(gs[j])) continue;
      check_gradient(n, j, nodes_[n.inputs[j]].value, value_of(gs[j]));
      mode.add(n.inputs[j], std::move(gs[j]));
    }
  }
  if (released) released->release_all();
  mode.done();
}

void Tape::consume(std::uint32_t id) {
  nodes_[id].consumed = true;
  lowest_consumed_ = std::min(lowest_consumed_, id);
}

void Tape::backward_to_leaves(const Var& output, const Tensor& grad_output, bool retain_graph) {
  std::optional<FinalGradients> finals;
  if (BackwardObserver* observer = backward_observer()) {
    // Each Shared's lowest read at or below the output (reads are in node order).
    std::unordered_set<const void*> seen;
    std::vector<std::pair<std::uint32_t, Shared>> lowest;
    for (const auto& r : shared_reads_)
      if (r.node <= output.id() && nodes_[r.node].requires_grad && seen.insert(r.shared.identity()).second)
        lowest.emplace_back(r.node, r.shared);
    std::reverse(lowest.begin(), lowest.end());
    finals.emplace(*observer, std::move(lowest));
  }
  TensorMode mode(*this, output.id(), /*to_leaves=*/true, /*consumes=*/!retain_graph, finals ? &*finals : nullptr);
  mode.seed(output.id(), grad_output);
  propagate(mode, 0, output.id());
}

std::vector<Var> Tape::grad_of_inputs(std::span<const Var> outputs, std::span<const Var> inputs,
                                      std::span<const Tensor> seeds, std::uint32_t lo, std::uint32_t hi,
                                      bool create_graph) {
  auto run = [&](auto mode) {
    mode.keep_gradients_of(inputs);
    for (std::size_t k = 0; k < outputs.size(); ++k) {
      const Tensor& v = outputs[k].value();
      mode.seed(outputs[k].id(), seeds.empty() ? ones(v.shape(), v.dtype()) : seeds[k]);
    }
    propagate(mode, lo, hi);
    return mode.gradients_of(inputs);
  };
  return create_graph ? run(VarMode(*this, hi)) : run(TensorMode(*this, hi, /*to_leaves=*/false, /*consumes=*/false));
}

}  // namespace recur
