#include <recur/autodiff/recompute_detail.hpp>

#include <algorithm>

#include <recur/autodiff/tape_access.hpp>

namespace recur {
namespace detail {

std::size_t saved_bytes(const Node& n) {
  std::size_t bytes = 0;
  const Storage* own = n.value.defined() ? n.value.storage().get() : nullptr;
  if (n.op)
    for (const Tensor& t : n.op.saved())
      if (t.defined() && t.storage().get() != own) bytes += t.storage()->bytes();
  return bytes;
}

std::size_t replayed_bytes(const NodeStore& nodes, const Node& n) {
  std::size_t bytes = 0;
  const Storage* own = n.value.defined() ? n.value.storage().get() : nullptr;
  if (own && std::none_of(n.inputs.begin(), n.inputs.end(), [&](std::uint32_t j) {
        return nodes[j].value.defined() && nodes[j].value.storage().get() == own;
      }))
    bytes += own->bytes();
  return bytes + saved_bytes(n);
}

Recompute::~Recompute() = default;

void Recompute::release(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep) {
  std::sort(keep.begin(), keep.end());
  const std::size_t inner = forget_inside(begin, end);
  auto at = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                             [](const Range& r, std::uint32_t b) { return r.begin < b; });
  Range& range = *ranges_.insert(at, Range{begin, end, std::move(keep)});
  range.replay_bytes = inner;  // released already: the ranges inside, replayed with this one
  release(range);
}

Chain& Recompute::add_chain(std::uint32_t begin, ChainPolicy policy) {
  return *chains_.emplace_back(std::make_unique<Chain>(nodes_, *this, begin, policy));
}

void Recompute::remove_chain(const Chain* chain) {
  std::erase_if(chains_, [&](const auto& c) { return c.get() == chain; });
}

std::vector<ChainStats> Recompute::chain_stats() const {
  std::vector<ChainStats> out;
  for (const auto& c : chains_) out.push_back(c->stats());
  return out;
}

std::size_t Recompute::forget_inside(std::uint32_t begin, std::uint32_t end, const Chain* except) {
  std::size_t bytes = 0;
  std::erase_if(ranges_, [&](const Range& r) {
    const bool inside = r.begin >= begin && r.end <= end;
    if (inside) bytes += r.replay_bytes;
    return inside;
  });
  // A chain still recording is an enclosing loop's (it may begin where an inner one does).
  std::erase_if(chains_, [&](const auto& c) {
    const bool inside = c.get() != except && c->finished() && c->begin() >= begin && c->end() <= end;
    if (inside) bytes += c->released_bytes();
    return inside;
  });
  return bytes;
}

bool Recompute::all_consumed(std::uint32_t begin, std::uint32_t end) const {
  for (std::uint32_t i = begin; i < end; ++i)
    if (nodes_[i].op && !nodes_[i].consumed) return false;
  return true;
}

std::size_t Recompute::replay_bytes(std::uint32_t begin, std::uint32_t end) const {
  std::size_t most = 0;
  for (const Range& r : ranges_)
    if (r.begin >= begin && r.end <= end && !all_consumed(r.begin, r.end)) most = std::max(most, r.replay_bytes);
  for (const auto& c : chains_)
    if (c->begin() >= begin && c->end() <= end && !all_consumed(c->begin(), c->end()))
      most = std::max(most, c->replay_bytes());
  return most;
}

void Recompute::truncate(std::uint32_t size) noexcept {
  while (!ranges_.empty() && ranges_.back().end > size) ranges_.pop_back();
  std::erase_if(chains_, [&](const auto& c) { return c->begin() > size || c->end() > size; });
  dropped_.erase(std::lower_bound(dropped_.begin(), dropped_.end(), size), dropped_.end());
}

void Recompute::drop_unread(std::uint32_t id) {
  Node& n = nodes_[id];
  if (!n.op || !n.value.defined()) return;  // a leaf cannot be replayed; a released value is gone already
  n.value = Tensor(nullptr, 0, n.value.shape(), n.value.dtype());
  if (n.dropped) return;
  dropped_.insert(std::lower_bound(dropped_.begin(), dropped_.end(), id), id);
  n.dropped = true;
}

// A dropped value read after all: its op runs again on its inputs, and it stays.
void Recompute::undrop(std::uint32_t id) {
  Node& n = nodes_[id];
  boost::container::small_vector<const Tensor*, 4> in;
  for (std::uint32_t j : n.inputs) {
    if (!nodes_[j].value.defined()) ensure_value(j);
    in.push_back(&nodes_[j].value);
  }
  n.value = n.op.replay(InputList<Tensor>(in.data(), in.size()));
  dropped_.erase(std::lower_bound(dropped_.begin(), dropped_.end(), id));
  n.dropped = false;
}

Chain* Recompute::chain_of(std::uint32_t id) {
  for (auto& c : chains_)
    if (c->contains(id)) return c.get();
  return nullptr;
}

void Recompute::release(Range& range) {
  auto released = [&](std::uint32_t i) {
    return nodes_[i].op && !std::binary_search(range.keep.begin(), range.keep.end(), i);
  };
  // A kept node (a loop's output) keeps its value; its op's saved tensors go too when its
  // backward can make them again (a captured step's fused chain, whose output is the step's).
  auto drops_saved_only = [&](std::uint32_t i) { return nodes_[i].op && !released(i) && nodes_[i].op.remakes_saved(); };
  if (!range.measured) {  // once, before anything is dropped (a view's input must still be there)
    std::size_t remade = 0;  // such ops remake theirs one at a time, in their own backward
    for (std::uint32_t i = range.begin; i < range.end; ++i) {
      if (released(i)) range.replay_bytes += replayed_bytes(nodes_, nodes_[i]);
      if (drops_saved_only(i)) remade = std::max(remade, saved_bytes(nodes_[i]));
    }
    range.replay_bytes += remade;
    range.measured = true;
  }
  for (std::uint32_t i = range.begin; i < range.end; ++i) {
    if (released(i)) {
      nodes_[i].value = Tensor();
      nodes_[i].op.drop_saved();
    } else if (drops_saved_only(i)) {
      nodes_[i].op.drop_saved();
    }
  }
  range.materialized = false;
}

void Recompute::rematerialize(Range& range) {
  boost::container::small_vector<const Tensor*, 4> in;
  for (std::uint32_t i = range.begin; i < range.end; ++i) {
    Node& n = nodes_[i];
    if (n.value.defined()) continue;
    in.clear();
    for (std::uint32_t j : n.inputs) {
      if (!nodes_[j].value.defined()) ensure_value(j);  // an input from an earlier range
      in.push_back(&nodes_[j].value);
    }
    n.value = n.op.replay(InputList<Tensor>(in.data(), in.size()));
  }
  range.materialized = true;
}

void Recompute::ensure_value(std::uint32_t id) {
  if (dropped(id)) return undrop(id);
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id,
                             [](std::uint32_t i, const Range& r) { return i < r.begin; });
  if (it == ranges_.begin() || id >= std::prev(it)->end) {
    if (Chain* chain = chain_of(id)) return chain->ensure_value(id);
    fail<ValueError>("backward", "the value of node ", id, " was released and belongs to no checkpoint segment");
  }
  rematerialize(*std::prev(it));
}

void Recompute::ensure_node_slow(const Node& n, std::uint32_t i, bool all) {
  // A chain replays the node's whole step even when its value is held (a snapshot): the
  // rule may need what the step computed before it.
  if (Chain* chain = n.op ? chain_of(i) : nullptr) chain->ensure_step_of(i);
  else if (n.op && !n.value.defined() && (all || !dropped(i) || n.op.backward_reads(kBackwardOutput))) ensure_value(i);
  ensure_inputs_slow(n, all);
}

void Recompute::ensure_inputs_slow(const Node& n, bool all) {
  for (std::size_t k = 0; k < n.inputs.size(); ++k) {
    const std::uint32_t in = n.inputs[k];
    if (!nodes_[in].value.defined() && (all || !dropped(in) || n.op.backward_reads(k))) ensure_value(in);
  }
}

void Recompute::release_above(std::uint32_t i) {
  for (auto& range : ranges_)
    if (range.materialized && range.begin > i) release(range);
  for (auto& chain : chains_) chain->release_above(i);
}

void Recompute::release_all() {
  for (auto& range : ranges_)
    if (range.materialized) release(range);
  for (auto& chain : chains_) chain->release_all();
}

}  // namespace detail

void TapeAccess::release_values(Tape& tape, std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep) {
  if (!tape.recompute_) tape.recompute_ = std::make_unique<detail::Recompute>(tape.nodes_);
  tape.recompute_->release(begin, end, std::move(keep));
}

void TapeAccess::drop_unread_value(Tape& tape, std::uint32_t id) {
  if (!tape.recompute_) tape.recompute_ = std::make_unique<detail::Recompute>(tape.nodes_);
  tape.recompute_->drop_unread(id);
}

bool TapeAccess::value_dropped(const Tape& tape, std::uint32_t id) {
  return tape.recompute_ && tape.recompute_->dropped(id);
}

detail::Chain& TapeAccess::begin_chain(Tape& tape, std::uint32_t begin, detail::ChainPolicy policy) {
  if (!tape.recompute_) tape.recompute_ = std::make_unique<detail::Recompute>(tape.nodes_);
  return tape.recompute_->add_chain(begin, policy);
}

void TapeAccess::drop_chain(Tape& tape, const detail::Chain* chain) {
  if (tape.recompute_) tape.recompute_->remove_chain(chain);
}

std::vector<detail::ChainStats> TapeAccess::chain_stats(const Tape& tape) {
  return tape.recompute_ ? tape.recompute_->chain_stats() : std::vector<detail::ChainStats>{};
}

void TapeAccess::share_value(Tape& tape, std::uint32_t id, const Tensor& view) {
  detail::Node& n = tape.nodes_[id];
  if (n.value.defined() && (n.value.shape() != view.shape() || n.value.dtype() != view.dtype()))
    fail<ShapeError>("share_value", "node ", id, " holds ", n.value.dtype(), " of shape ", to_string(n.value.shape()),
                     ", the view is ", view.dtype(), " of shape ", to_string(view.shape()));
  n.value = view;
}

}  // namespace recur
