#include <recur/ops/scan/scan_scope_detail.hpp>

#include <algorithm>

#include <recur/autodiff/tape_access.hpp>

namespace recur::scan_engine {

void ScanScope::set_override(const Shared& shared, std::uint32_t node) {
  for (auto& [who, id] : overrides)
    if (who == shared.identity()) {
      id = node;
      return;
    }
  overrides.emplace_back(shared.identity(), node);
}

std::optional<std::uint32_t> ScanScope::redirect_read(const Shared& shared) const {
  for (const auto& [who, node] : overrides)
    if (who == shared.identity()) return node;
  return std::nullopt;
}

void ScanScope::check_inputs(const Tape& tape, std::string_view op, std::span<const std::uint32_t> inputs) const {
  for (std::uint32_t id : inputs) {
    if (id >= begin) continue;
    if (std::find(allowed.begin(), allowed.end(), id) != allowed.end()) continue;
    const Tensor& v = TapeAccess::node_value(tape, id);
    fail<ValueError>(op, "strict scan: the step function uses a variable (", v.dtype(), " of shape ",
                     to_string(v.shape()), ") that was not passed to scan; pass it in non_sequences");
  }
}

void ScanScope::check_read(const Tape& tape, const Shared& shared, const std::uint32_t* earlier) const {
  if (earlier) {
    check_inputs(tape, "scan", std::span<const std::uint32_t>(earlier, 1));
    return;
  }
  fail<ValueError>("scan", "strict: the step function reads shared variable '", shared.name(), "' of shape ",
                   to_string(shared.shape()), ", which was not passed in non_sequences");
}

void ScanScope::take_update(const Shared& shared, const Var& value) {
  set_override(shared, value.id());
  for (auto& [who, v] : implicit_updates)
    if (who == shared) {
      v = value;
      return;
    }
  implicit_updates.emplace_back(shared, value);
}

}  // namespace recur::scan_engine
