#include <recur/autodiff/module.hpp>

#include <recur/core/error.hpp>

namespace recur {

std::vector<Shared> Module::parameters() const {
  std::vector<Shared> out;
  out.reserve(parameters_.size());
  for (const auto& [name, p] : parameters_) out.push_back(p);
  return out;
}

Shared Module::parameter(const std::string& name) const {
  for (const auto& [n, p] : parameters_)
    if (n == name) return p;
  fail<ValueError>("Module::parameter", "no parameter named '", name, "' (", parameters_.size(),
                   " registered)");
}

void Module::zero_grad() const {
  for (auto [name, p] : parameters_) p.zero_grad();  // Shared is a handle: a copy zeroes the same gradient
}

Shared Module::register_parameter(const std::string& name, Tensor value) {
  for (const auto& [n, p] : parameters_)
    if (n == name) fail<ValueError>("Module::register_parameter", "'", name, "' is registered twice");
  Shared shared(std::move(value), name);
  parameters_.emplace_back(name, shared);
  return shared;
}

void Module::register_module(const std::string& name, const Module& child) {
  for (const auto& [n, p] : child.parameters_) {
    std::string full = name + "." + n;
    for (const auto& [existing, q] : parameters_)
      if (existing == full) fail<ValueError>("Module::register_module", "'", full, "' is registered twice");
    parameters_.emplace_back(std::move(full), p);
  }
}

}  // namespace recur
