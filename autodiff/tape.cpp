// The tape's node store and recording: leaves, Shared reads, pushed op nodes, scopes.
#include <recur/autodiff/tape.hpp>

#include <algorithm>
#include <new>
#include <unordered_set>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/recompute_detail.hpp>
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/recording_scope.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/autodiff/tape_registry_detail.hpp>
#include <recur/core/creation.hpp>
#include <recur/core/elementwise.hpp>

namespace recur {

namespace detail {
NodeStore::~NodeStore() {
  for (std::uint32_t i = 0; i < size_; ++i) (*this)[i].~Node();
  for (Node* c : chunks_) ::operator delete(static_cast<void*>(c));
}

Node& NodeStore::emplace() {
  // Node ids are uint32 (and leaf and read indices int32): a tape holds fewer nodes.
  if (size_ >= static_cast<std::uint32_t>(INT32_MAX))
    fail<TapeError>("tape", "a tape holds at most ", INT32_MAX, " nodes (node ids are 32-bit)");
  if ((size_ >> kChunkBits) == chunks_.size()) {
    chunks_.reserve(chunks_.size() + 1);  // first, so that the new chunk cannot leak
    chunks_.push_back(static_cast<Node*>(::operator new(sizeof(Node) * kChunk)));
  }
  Node* n = new (&chunks_[size_ >> kChunkBits][size_ & (kChunk - 1)]) Node();
  ++size_;
  return *n;
}

void NodeStore::pop_back() {
  --size_;
  (*this)[size_].~Node();
}
}  // namespace detail

std::optional<OpDescription> Tape::describe(const Var& v) const {
  if (!owns(v))
    fail<TapeError>("Tape::describe", "argument 'v' is ", v.defined() ? "a Var of another tape" : "an undefined Var");
  return TapeAccess::describe(*this, v.id());
}

Tape::Tape() {
  const detail::TapeTicket ticket = detail::register_tape(*this);
  slot_ = ticket.slot;
  serial_ = ticket.serial;
}

Tape::~Tape() { detail::unregister_tape(*this, slot_); }

Var Tape::push(Tensor value, std::span<const std::uint32_t> inputs, detail::OpBox op, bool requires_grad) {
  const std::uint32_t size = this->size();
  try {
    detail::Node& n = nodes_.emplace();
    n.value = std::move(value);
    if (op) n.inputs.assign(inputs.begin(), inputs.end());
    n.op = std::move(op);
    n.requires_grad = requires_grad;
  } catch (const std::bad_alloc&) {  // no half-made node stays behind
    truncate(size);
    fail<MemoryError>("tape", "out of memory (std::bad_alloc) while recording node ", size);
  }
  return handle(nodes_.size() - 1);
}

Var TapeAccess::push_output(Tape& tape, Tensor value, std::uint32_t main, std::size_t k) {
  // Under NoGrad, or when no input needs a gradient, the op kept no rule: a plain value.
  const bool linked = static_cast<bool>(tape.nodes_[main].op);
  Var v = tape.push(std::move(value), {}, {}, tape.nodes_[main].requires_grad);
  if (linked) {
    detail::Node& n = tape.nodes_[v.id()];
    n.inputs.assign(1, main);
    n.output = static_cast<std::uint8_t>(k);
  }
  return v;
}

Var Tape::constant(Tensor value) {
  if (!value.defined()) fail<ValueError>("Tape::constant", "the tensor is undefined");
  return push(std::move(value), {}, {}, false);
}

template <class List>
void Tape::append_or_roll_back(List& list, typename List::value_type entry, std::uint32_t node) {
  try {
    list.push_back(std::move(entry));
  } catch (const std::bad_alloc&) {
    truncate(node);
    fail<MemoryError>("tape", "out of memory (std::bad_alloc) while recording node ", node);
  }
}

Var Tape::variable(Tensor value) {
  if (!value.defined()) fail<ValueError>("Tape::variable", "the tensor is undefined");
  if (!is_floating(value.dtype()))
    fail<DTypeError>("Tape::variable", "a variable must be float32 or float64, got ", value.dtype(),
                     " of shape ", to_string(value.shape()));
  Var v = push(std::move(value), {}, {}, grad_enabled());
  append_or_roll_back(leaf_grads_, {v.id(), Tensor()}, v.id());  // the node points at its entry only once it exists
  nodes_[v.id()].leaf_grad = static_cast<std::int32_t>(leaf_grads_.size() - 1);
  return v;
}

Var Tape::read(const Shared& shared) {
  // Inside a scope, a Shared may read as something else (an update made inside a loop's step).
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    if (const auto node = (*s)->redirect_read(shared)) return handle(*node);
  const RecordingScope* checking = checking_scopes_ > 0 ? innermost_checking_scope() : nullptr;
  const bool wants_grad = is_floating(shared.dtype()) && grad_enabled();
  // Reads of one Shared share a node, unless the value changed since (a new version) or
  // the earlier read was made under NoGrad and this one wants a gradient.
  for (auto r = shared_reads_.rbegin(); r != shared_reads_.rend(); ++r) {
    if (!(r->shared == shared)) continue;
    if (r->version != shared.version() || (wants_grad && !nodes_[r->node].requires_grad)) break;
    if (checking) checking->check_read(*this, shared, &r->node);
    return handle(r->node);
  }
  if (checking) checking->check_read(*this, shared, nullptr);
  auto [value, version] = shared.snapshot();
  Var v = push(std::move(value), {}, {}, wants_grad);
  append_or_roll_back(shared_reads_, {v.id(), shared, version}, v.id());
  nodes_[v.id()].shared_read = static_cast<std::int32_t>(shared_reads_.size() - 1);
  return v;
}

void Tape::truncate(std::uint32_t size) noexcept {
  if (size < nodes_.size() && epoch_ < (std::uint32_t{1} << (64 - Var::kSerialBits)) - 1) {
    // Room first: a drop that cannot be noted (memory ran out) goes unseen, as it would have
    // before Vars were checked, rather than have valid Vars refused.
    const bool noted = drops_.size() < drops_.capacity() || [&]() noexcept {
      try {
        drops_.reserve(2 * drops_.size() + 1);
        return true;
      } catch (const std::bad_alloc&) {
        return false;
      }
    }();
    if (noted) {
      ++epoch_;
      while (!drops_.empty() && drops_.back().size >= size) drops_.pop_back();
      drops_.push_back({epoch_, size});  // within capacity: cannot throw
    }
  }
  while (nodes_.size() > size) nodes_.pop_back();
  if (recompute_) recompute_->truncate(size);
  while (!shared_reads_.empty() && shared_reads_.back().node >= size) shared_reads_.pop_back();
  while (!leaf_grads_.empty() && leaf_grads_.back().node >= size) leaf_grads_.pop_back();
  std::erase_if(regions_, [&](const detail::RegionRecord& s) { return s.end > size; });
}

void Tape::check_not_dropped(const Var& v) const {
  // The first drop after v was made leaves the smallest size of those after it.
  const auto later = std::upper_bound(drops_.begin(), drops_.end(), v.epoch(),
                                      [](std::uint32_t e, const Drop& d) { return e < d.epoch; });
  if (later != drops_.end() && v.id() >= later->size)
    fail<TapeError>("Var", "node ", v.id(), " was dropped from its tape after this Var was made (a loop drops ",
                    "its step function's calls once it captured the step, and each step's nodes when it runs "
                    "without gradients; a failed op is rolled back): a Var kept from inside a step function is "
                    "not the value of any step: return the values you need from the step (as outputs), or run "
                    "the loop with Capture::off and gradients on");
}

Tensor Tape::leaf_grad(std::uint32_t id) const {
  const detail::Node& n = nodes_[id];
  if (n.leaf_grad >= 0 && leaf_grads_[n.leaf_grad].grad.defined()) return leaf_grads_[n.leaf_grad].grad;
  return zeros(n.value.shape(), n.value.dtype());
}

void Tape::accumulate_into_leaf(const detail::Node& n, const Tensor& g) {
  if (n.shared_read >= 0) {
    shared_reads_[n.shared_read].shared.accumulate_grad(g);
  } else if (n.leaf_grad >= 0) {
    Tensor& acc = leaf_grads_[n.leaf_grad].grad;
    if (!acc.defined()) acc = g;
    else accumulate_into(acc, g);
  }
}

detail::Recompute* Tape::released_ranges() const {
  return recompute_ && !recompute_->empty() ? recompute_.get() : nullptr;
}

std::size_t Tape::bytes_held() const {
  std::unordered_set<const Storage*> seen;
  std::size_t bytes = 0;
  auto count = [&](const Tensor& v) {
    if (v.defined() && seen.insert(v.storage().get()).second) bytes += v.storage()->bytes();
  };
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    count(nodes_[i].value);
    if (nodes_[i].op)
      for (const Tensor& t : nodes_[i].op.saved()) count(t);
  }
  return bytes;
}

// ---- scopes -----------------------------------------------------------------------------

const RecordingScope* Tape::innermost_checking_scope() const {
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    if ((*s)->checks_inputs()) return *s;
  return nullptr;
}

void Tape::check_inputs_in_scope(std::string_view op, std::span<const std::uint32_t> inputs) const {
  innermost_checking_scope()->check_inputs(*this, op, inputs);
}

void TapeAccess::push_scope(Tape& tape, RecordingScope* scope) {
  tape.scopes_.push_back(scope);
  if (scope->checks_inputs()) ++tape.checking_scopes_;
}

void TapeAccess::pop_scope(Tape& tape) {
  if (tape.scopes_.back()->checks_inputs()) --tape.checking_scopes_;
  tape.scopes_.pop_back();
}

void TapeAccess::cut_gradients(Tape& tape, std::uint32_t begin, std::uint32_t end) {
  for (std::uint32_t i = begin; i < end && i < tape.nodes_.size(); ++i) tape.nodes_[i].cut = true;
}

namespace {
// detach's op: the value itself, no gradient (record_without_gradient).
struct Detach {
  static constexpr std::string_view name = "detach";
  Tensor forward(const Tensor& x) const { return x; }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>&) const {
    return Grads<V>(1);
  }
};
}  // namespace

Var detach(const Var& v) { return record_without_gradient(Detach{}, v); }

}  // namespace recur
