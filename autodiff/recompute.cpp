#include <recur/autodiff/recompute_detail.hpp>

#include <algorithm>

#include <recur/autodiff/tape_access.hpp>

namespace recur {
namespace detail {

void Recompute::release(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep) {
  std::sort(keep.begin(), keep.end());
  std::erase_if(ranges_, [&](const Range& r) { return r.begin >= begin && r.end <= end; });
  auto at = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                             [](const Range& r, std::uint32_t b) { return r.begin < b; });
  release(*ranges_.insert(at, Range{begin, end, std::move(keep)}));
}

void Recompute::truncate(std::uint32_t size) {
  while (!ranges_.empty() && ranges_.back().end > size) ranges_.pop_back();
}

void Recompute::release(Range& range) {
  for (std::uint32_t i = range.begin; i < range.end; ++i) {
    Node& n = nodes_[i];
    if (n.op && !std::binary_search(range.keep.begin(), range.keep.end(), i)) {
      n.value = Tensor();
      n.op.drop_saved();
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
  auto it = std::upper_bound(ranges_.begin(), ranges_.end(), id,
                             [](std::uint32_t i, const Range& r) { return i < r.begin; });
  if (it == ranges_.begin() || id >= std::prev(it)->end)
    fail<ValueError>("backward", "the value of node ", id, " was released and belongs to no checkpoint segment");
  rematerialize(*std::prev(it));
}

void Recompute::ensure_node(const Node& n, std::uint32_t i) {
  if (n.op && !n.value.defined()) ensure_value(i);
  ensure_inputs(n);
}

void Recompute::ensure_inputs(const Node& n) {
  for (std::uint32_t in : n.inputs)
    if (!nodes_[in].value.defined()) ensure_value(in);
}

void Recompute::release_above(std::uint32_t i) {
  for (auto& range : ranges_)
    if (range.materialized && range.begin > i) release(range);
}

void Recompute::release_all() {
  for (auto& range : ranges_)
    if (range.materialized) release(range);
}

}  // namespace detail

void TapeAccess::release_values(Tape& tape, std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep) {
  if (!tape.recompute_) tape.recompute_ = std::make_unique<detail::Recompute>(tape.nodes_);
  tape.recompute_->release(begin, end, std::move(keep));
}

void TapeAccess::share_value(Tape& tape, std::uint32_t id, const Tensor& view) {
  detail::Node& n = tape.nodes_[id];
  if (n.value.defined() && (n.value.shape() != view.shape() || n.value.dtype() != view.dtype()))
    fail<ShapeError>("share_value", "node ", id, " holds ", n.value.dtype(), " of shape ", to_string(n.value.shape()),
                     ", the view is ", view.dtype(), " of shape ", to_string(view.shape()));
  n.value = view;
}

}  // namespace recur
