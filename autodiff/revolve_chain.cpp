#include <recur/autodiff/revolve_chain_detail.hpp>

#include <algorithm>
#include <unordered_set>

#include <recur/autodiff/recompute_detail.hpp>
#include <recur/autodiff/revolve.hpp>

namespace recur::detail {
namespace {

void merge_into(std::vector<std::uint32_t>& sorted, std::vector<std::uint32_t> more) {
  std::sort(more.begin(), more.end());
  const auto middle = static_cast<std::ptrdiff_t>(sorted.size());
  sorted.insert(sorted.end(), more.begin(), more.end());
  std::inplace_merge(sorted.begin(), sorted.begin() + middle, sorted.end());
  sorted.erase(std::unique(sorted.begin(), sorted.end()), sorted.end());
}

bool has(const std::vector<std::uint32_t>& sorted, std::uint32_t id) {
  return std::binary_search(sorted.begin(), sorted.end(), id);
}

}  // namespace

Chain::Chain(NodeStore& nodes, Recompute& owner, std::uint32_t begin, ChainPolicy policy)
    : nodes_(nodes), owner_(owner), policy_(policy), bounds_{begin} {
  if (policy_.snapshots > 0) {
    stats_.snapshots = policy_.snapshots;
    sweep_ = revolve::forward_snapshots(policy_.planned_steps, policy_.snapshots);
  }
  stats_.peak_snapshots = 1;  // the start
}

std::int64_t Chain::step_of(std::uint32_t id) const {
  return std::upper_bound(bounds_.begin(), bounds_.end(), id) - bounds_.begin() - 1;
}

bool Chain::kept(std::uint32_t id) const { return has(keep_, id); }

void Chain::drop(std::uint32_t id) {
  Node& n = nodes_[id];
  n.value = Tensor();
  n.op.drop_saved();
}

// s from the budget: one step whole (the one being reversed) plus s - 1 carried states
// beyond the start must fit.
void Chain::choose_snapshots(const std::vector<std::uint32_t>& carried) {
  std::unordered_set<const Storage*> seen;
  auto bytes_of = [&](const Tensor& t) -> std::size_t {
    return t.defined() && seen.insert(t.storage().get()).second ? t.storage()->bytes() : 0;
  };
  std::size_t step_bytes = 0, carry_bytes = 0;
  // Buffers the step only views (the sequence it indexes, the initial state) are not its.
  for (std::uint32_t i = bounds_[0]; i < bounds_[1]; ++i)
    for (std::uint32_t j : nodes_[i].inputs)
      if (j < bounds_[0] && nodes_[j].value.defined()) seen.insert(nodes_[j].value.storage().get());
  for (std::uint32_t i = bounds_[0]; i < bounds_[1]; ++i) {
    const Node& n = nodes_[i];
    if (!n.op) continue;
    step_bytes += bytes_of(n.value);
    for (const Tensor& t : n.op.saved()) step_bytes += bytes_of(t);
  }
  seen.clear();
  for (std::uint32_t id : carried) carry_bytes += bytes_of(nodes_[id].value);
  const std::size_t spare = policy_.budget_bytes > step_bytes ? policy_.budget_bytes - step_bytes : 0;
  const auto extra = static_cast<std::int64_t>(spare / std::max<std::size_t>(carry_bytes, 1));
  stats_.snapshots = 1 + std::min(extra, std::max<std::int64_t>(policy_.planned_steps, 1));
  sweep_ = revolve::forward_snapshots(policy_.planned_steps, stats_.snapshots);
}

void Chain::measure_first_step(const std::vector<std::uint32_t>& carried, const std::vector<std::uint32_t>& results,
                               std::size_t inner_bytes) {
  stats_.step_bytes = inner_bytes;
  for (std::uint32_t i = bounds_[0]; i < bounds_[1]; ++i)
    if (nodes_[i].op) stats_.step_bytes += replayed_bytes(nodes_, nodes_[i]);
  // A carry holds whole buffers, though it may be a view of a value the step drops: count
  // each buffer once, except those of values from before the step (the initial state).
  std::vector<const Storage*> seen;
  for (std::uint32_t i = bounds_[0]; i < bounds_[1]; ++i)
    for (std::uint32_t j : nodes_[i].inputs)
      if (j < bounds_[0] && nodes_[j].value.defined()) seen.push_back(nodes_[j].value.storage().get());
  for (std::uint32_t id : carried) {
    const Tensor& v = nodes_[id].value;
    if (!v.defined() || std::find(results.begin(), results.end(), id) != results.end() ||
        std::find(seen.begin(), seen.end(), v.storage().get()) != seen.end())
      continue;
    seen.push_back(v.storage().get());
    stats_.carry_bytes += v.storage()->bytes();
  }
}

// Backward holds at most s states (the start included, which the chain does not hold)
// and one step's values at once, plus the state an advance is at: beyond the snapshots
// held now, s - held more carries and one step.
std::size_t Chain::replay_bytes() const {
  if (!finished_ || stats_.steps == 0) return 0;
  const auto more = std::max<std::int64_t>(0, stats_.snapshots - static_cast<std::int64_t>(held_.size()));
  return stats_.step_bytes + static_cast<std::size_t>(more) * stats_.carry_bytes;
}

void Chain::step_recorded(std::uint32_t end, const std::vector<std::uint32_t>& carried,
                          const std::vector<std::uint32_t>& results) {
  const auto u = static_cast<std::int64_t>(bounds_.size()) - 1;
  bounds_.push_back(end);
  stats_.steps = u + 1;
  // Loops inside the step: it is replayed whole.
  const std::size_t inner_bytes = owner_.forget_inside(bounds_[u], end, this);
  merge_into(keep_, results);
  std::vector<std::uint32_t> now;
  for (std::uint32_t id : carried)
    if (contains(id)) now.push_back(id);
  std::sort(now.begin(), now.end());
  now.erase(std::unique(now.begin(), now.end()), now.end());
  if (u == 0) measure_first_step(now, results, inner_bytes);
  if (u == 0 && stats_.snapshots == 0) choose_snapshots(now);

  // The step before this one is done with, and so are the states no step will read again;
  // this step stays whole until the next, with its input state (it may be the last, which
  // backward reverses first).
  auto unneeded = [&](std::uint32_t id) {
    return nodes_[id].op && !kept(id) && !has(now, id) && !has(working_, id) && !has(protected_, id);
  };
  if (u >= 1)
    for (std::uint32_t i = bounds_[u - 1]; i < bounds_[u]; ++i) {
      if (unneeded(i)) drop(i);
      else if (nodes_[i].op && nodes_[i].op.remakes_saved()) nodes_[i].op.drop_saved();  // its backward makes them
    }
  for (std::uint32_t id : previous_)
    if (unneeded(id)) drop(id);
  if (std::binary_search(sweep_.begin(), sweep_.end(), u + 1)) {
    merge_into(protected_, now);
    stats_.peak_snapshots = std::max<std::int64_t>(
        stats_.peak_snapshots, 1 + (std::upper_bound(sweep_.begin(), sweep_.end(), u + 1) - sweep_.begin()));
  }
  previous_ = std::move(working_);
  working_ = std::move(now);
}

void Chain::finish(const std::vector<std::uint32_t>& keep) {
  finished_ = true;
  std::vector<std::uint32_t> mine;
  for (std::uint32_t id : keep)
    if (contains(id)) mine.push_back(id);
  merge_into(keep_, std::move(mine));
  const std::int64_t steps = stats_.steps;
  if (steps == 0) return;
  last_reader_.assign(end() - begin(), -1);
  for (std::int64_t u = 0; u < steps; ++u)
    for (std::uint32_t i = bounds_[u]; i < bounds_[u + 1]; ++i)
      for (std::uint32_t j : nodes_[i].inputs)
        if (contains(j) && j < bounds_[u]) last_reader_[j - begin()] = std::max(last_reader_[j - begin()], u);
  for (std::int64_t p : sweep_)
    if (p < steps) held_.push_back(p);
  taped_ = steps - 1;
  fill_last_ = true;
  holding_ = true;
  working_.clear();
  previous_.clear();
  protected_.clear();
  tidy(0, steps);
}

bool Chain::needed(std::uint32_t id, std::int64_t step) const {
  if (kept(id) || step == taped_) return true;
  const std::int64_t last = last_reader_[id - begin()];
  if (last <= step) return false;
  auto within = [&](std::int64_t state) { return state > step && state <= last; };
  const auto next = std::upper_bound(held_.begin(), held_.end(), step);
  return (next != held_.end() && *next <= last) || within(taped_) || within(current_);
}

void Chain::tidy(std::int64_t lo, std::int64_t hi) {
  hi = std::min(hi, stats_.steps);
  for (std::int64_t u = std::max<std::int64_t>(lo, 0); u < hi; ++u)
    for (std::uint32_t i = bounds_[u]; i < bounds_[u + 1]; ++i)
      if (nodes_[i].op && nodes_[i].value.defined() && !needed(i, u)) drop(i);
}

void Chain::note_held() {
  stats_.peak_snapshots = std::max<std::int64_t>(stats_.peak_snapshots, 1 + static_cast<std::int64_t>(held_.size()));
}

void Chain::replay(std::int64_t step) {
  boost::container::small_vector<const Tensor*, 4> in;
  bool ran = false;
  for (std::uint32_t i = bounds_[step]; i < bounds_[step + 1]; ++i) {
    Node& n = nodes_[i];
    if (!n.op || n.value.defined()) continue;
    in.clear();
    for (std::uint32_t j : n.inputs) {
      if (!nodes_[j].value.defined()) {
        if (contains(j))
          fail<ValueError>("backward", "node ", j, " of step ", step_of(j), " is needed to replay step ", step,
                           " but no snapshot holds it");
        owner_.ensure_value(j);
      }
      in.push_back(&nodes_[j].value);
    }
    n.value = n.op.replay(InputList<Tensor>(in.data(), in.size()));
    ran = true;
  }
  if (ran) ++stats_.replayed_steps;
}

void Chain::advance(std::int64_t from, std::int64_t to) {
  for (std::int64_t u = from; u < to; ++u) {
    current_ = u;
    replay(u);
    current_ = u + 1;
    // What state u held and state u+1 does not: the step itself and the states it read.
    std::int64_t lowest = u;
    for (std::uint32_t i = bounds_[u]; i < bounds_[u + 1]; ++i)
      for (std::uint32_t j : nodes_[i].inputs)
        if (contains(j)) lowest = std::min(lowest, step_of(j));
    tidy(std::max(lowest, from), u + 1);
  }
}

void Chain::reverse_step(std::int64_t t) {
  if (taped_ == t) return;
  holding_ = true;
  fill_last_ = false;
  std::int64_t top = std::max(taped_, t) + 1;
  taped_ = -1;
  current_ = -1;
  while (!held_.empty() && held_.back() > t) {
    top = std::max(top, held_.back());
    held_.pop_back();
  }
  tidy(t, top);  // what the steps above held
  std::int64_t from = held_.empty() ? 0 : held_.back();
  const std::int64_t start = from;
  // Down the schedule's rightmost path: each split is a snapshot the reversal of the steps
  // below t will restore from.
  for (std::int64_t c = stats_.snapshots - static_cast<std::int64_t>(held_.size()); t - from >= 1 && c > 1; --c) {
    const std::int64_t to = from + revolve::split(t + 1 - from, c);
    advance(from, to);
    held_.push_back(to);
    note_held();
    from = to;
  }
  advance(from, t);
  taped_ = t;
  current_ = -1;
  replay(t);
  tidy(start, t);
}

void Chain::ensure_step_of(std::uint32_t id) {
  if (!finished_)
    fail<ValueError>("backward", "a loop reversed with snapshots (Checkpoint::snapshots or budget) is differentiated before its "
                                 "loop ended");
  const std::int64_t u = step_of(id);
  if (taped_ != u) return reverse_step(u);
  if (fill_last_) replay(u);  // a loop inside the last step released part of it
  fill_last_ = false;
}

void Chain::ensure_value(std::uint32_t id) {
  if (nodes_[id].value.defined()) return;
  if (!finished_)
    fail<ValueError>("backward", "a loop reversed with snapshots (Checkpoint::snapshots or budget) is differentiated before its "
                                 "loop ended");
  const std::int64_t u = step_of(id);
  if (taped_ > u && last_reader_[id - begin()] >= taped_) {
    // The input state of the step being reversed was released under it (a pass of its own
    // inside a backward rule): replay that step again.
    const std::int64_t t = taped_;
    taped_ = -1;
    reverse_step(t);
  } else {
    reverse_step(u);
  }
}

void Chain::release_above(std::uint32_t i) {
  if (holding_ && i < begin()) release_all();
}

void Chain::release_all() {
  if (!holding_) return;
  held_.clear();
  taped_ = -1;
  current_ = -1;
  tidy(0, stats_.steps);
  holding_ = false;
}

}  // namespace recur::detail
