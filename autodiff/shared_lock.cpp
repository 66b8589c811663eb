#include <recur/autodiff/shared_lock.hpp>

#include <algorithm>
#include <functional>

#include <recur/core/error.hpp>

namespace recur {
namespace {
constexpr std::string_view kOp = "SharedLock";
bool before(const Shared& a, const Shared& b) { return std::less<const void*>{}(a.identity(), b.identity()); }
}  // namespace

SharedLock::SharedLock(std::vector<Shared> variables) : variables_(std::move(variables)) {
  for (std::size_t i = 0; i < variables_.size(); ++i)
    if (!variables_[i].defined()) fail<ValueError>(kOp, "variable ", i, " of ", variables_.size(), " is a null handle");
  // Address order is the one global order: every SharedLock takes its locks in it.
  std::sort(variables_.begin(), variables_.end(), before);
  variables_.erase(std::unique(variables_.begin(), variables_.end()), variables_.end());
  locks_.reserve(variables_.size());
  for (const Shared& s : variables_) locks_.push_back(s.lock_for_update());
}

Shared& SharedLock::locked(const Shared& s) const {
  const auto it = std::lower_bound(variables_.begin(), variables_.end(), s, before);
  if (it == variables_.end() || !(*it == s))
    fail<ValueError>(kOp, "'", s.defined() ? s.name() : "(null)", "' is not one of the ", variables_.size(),
                     " variables it holds");
  return *it;
}

Tensor SharedLock::value(const Shared& s) const { return locked(s).value_locked(); }

Tensor SharedLock::writable(const Shared& s) const { return locked(s).unique_value_locked(); }

void SharedLock::assign(const Shared& s, const Tensor& value) const {
  Shared& v = locked(s);
  v.check_assignable("SharedLock::assign", value);
  v.assign_locked(value);
}

}  // namespace recur
