#include <recur/autodiff/module_io.hpp>

#include <set>

#include <recur/autodiff/npz_variables_detail.hpp>
#include <recur/core/npz.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

// The handles of `variables`, once each is defined and each name appears once.
std::vector<Shared> handles_of(const NamedShared& variables, std::string_view op) {
  std::set<std::string_view> seen;
  std::vector<Shared> out;
  for (const auto& [name, shared] : variables) {
    if (!shared.defined()) fail<ValueError>(op, "parameter '", name, "' is a null Shared handle");
    if (!seen.insert(name).second) fail<ValueError>(op, "the name '", name, "' appears twice");
    out.push_back(shared);
  }
  return out;
}

// Whether LoadOptions::convert_dtypes may convert: not floating into int64 (it would truncate).
bool convertible(DType from, DType to) { return is_floating(to) || !is_floating(from); }

// The member as its parameter takes it: converted when asked and allowed, else as it is
// (and then checked).
Tensor value_for(const fs::path& path, const std::string& name, const Tensor& member, const Shared& parameter,
                 const LoadOptions& options) {
  const bool may = convertible(member.dtype(), parameter.dtype());
  const Tensor value = options.convert_dtypes && may ? member.to(parameter.dtype()) : member;
  detail::check_member("load", path, name, value, parameter.dtype(), parameter.shape(), "the parameter",
                       may ? " (LoadOptions::convert_dtypes converts it)"
                           : " (a floating member is never converted into an int64 parameter: it would truncate)");
  return value;
}

}  // namespace

void save(const NamedShared& variables, const fs::path& path) {
  const std::vector<Tensor> values = detail::read_together(handles_of(variables, "save"));
  NamedTensors arrays;
  for (std::size_t i = 0; i < values.size(); ++i) arrays.emplace_back(variables[i].first, values[i]);
  save_npz(path, arrays);
}

LoadReport load(const NamedShared& variables, const fs::path& path, const LoadOptions& options) {
  handles_of(variables, "load");
  const TensorMap in_file = load_npz_map(path);
  std::set<std::string, std::less<>> expected;
  for (const auto& [name, shared] : variables) expected.insert(name);
  detail::MemberMismatch mismatch = detail::compare_members(in_file, expected);
  if (options.strict && !mismatch.empty())
    fail<ValueError>("load", detail::quoted(path), ": the file does not match the parameters: ",
                     mismatch.describe("parameters the file lacks", "members no parameter has"),
                     " (LoadOptions::strict = false skips them)");

  // Every value checked (and converted) before the first is assigned.
  std::vector<Shared> targets;
  std::vector<Tensor> values;
  for (const auto& [name, shared] : variables)
    if (const auto member = in_file.find(name); member != in_file.end()) {
      targets.push_back(shared);
      values.push_back(value_for(path, name, member->second, shared, options));
    }
  detail::assign_together(targets, values);
  return {std::move(mismatch.missing), std::move(mismatch.unexpected)};
}

void save(const Module& module, const fs::path& path) { save(module.named_parameters(), path); }

LoadReport load(const Module& module, const fs::path& path, const LoadOptions& options) {
  return load(module.named_parameters(), path, options);
}

}  // namespace recur
