#include <recur/ops/scan/types.hpp>

namespace recur {

Updates::Updates(std::initializer_list<std::pair<Shared, Var>> items) {
  for (const auto& [s, v] : items) set(s, v);
}

void Updates::set(const Shared& shared, const Var& value) {
  if (!shared.defined()) fail<ValueError>("Updates", "a null Shared handle");
  for (auto& item : items_)
    if (item.first == shared) {
      item.second = value;
      return;
    }
  items_.emplace_back(shared, value);
}

bool Updates::contains(const Shared& shared) const {
  for (const auto& item : items_)
    if (item.first == shared) return true;
  return false;
}

const Var& Updates::operator[](const Shared& shared) const {
  for (const auto& item : items_)
    if (item.first == shared) return item.second;
  fail<ValueError>("Updates", "no update for shared variable '", shared.name(), "'");
}

void apply_updates(const Updates& updates) {
  for (const auto& [shared, value] : updates) {
    const Tensor& v = value.value();
    if (v.shape() != shared.shape() || v.dtype() != shared.dtype())
      fail<ShapeError>("apply_updates", "the update of '", shared.name(), "' is ", v.dtype(), " of shape ",
                       to_string(v.shape()), " but the variable is ", shared.dtype(), " of shape ",
                       to_string(shared.shape()));
  }
  for (const auto& [shared, value] : updates) {
    Shared target = shared;
    target.assign(value.value());
  }
}

}  // namespace recur
