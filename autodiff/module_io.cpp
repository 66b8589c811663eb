#include <recur/autodiff/module_io.hpp>

#include <functional>
#include <optional>
#include <set>

#include <recur/autodiff/npz_variables_detail.hpp>
#include <recur/core/npz.hpp>
#include <recur/core/safetensors_detail.hpp>

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

// The values of `variables` under their names, read together (what a save writes).
NamedTensors values_of(const NamedShared& variables, std::string_view op) {
  const std::vector<Tensor> values = detail::read_together(handles_of(variables, op));
  NamedTensors arrays;
  for (std::size_t i = 0; i < values.size(); ++i) arrays.emplace_back(variables[i].first, values[i]);
  return arrays;
}

// Whether LoadOptions::convert_dtypes may convert into `to`: not floating into int64 (it would truncate).
bool convertible(DType from, DType to) { return is_floating(to) || !is_floating(from); }
std::string_view dtype_remedy(bool convertible) {
  return convertible ? " (LoadOptions::convert_dtypes converts it)"
                     : " (a floating member is never converted into an int64 parameter: it would truncate)";
}

// The member as its parameter takes it: converted when asked and allowed, else as it is
// (and then checked).
Tensor value_for(std::string_view op, const fs::path& path, const std::string& name, const Tensor& member,
                 const Shared& parameter, const LoadOptions& options) {
  const bool may = convertible(member.dtype(), parameter.dtype());
  const Tensor value = options.convert_dtypes && may ? member.to(parameter.dtype()) : member;
  detail::check_member(op, path, name, value, parameter.dtype(), parameter.shape(), "the parameter", dtype_remedy(may));
  return value;
}

// A file as a load sees it: the names of its members, and one member's value as the file
// holds it, read for the parameter it is meant for.
struct Members {
  std::set<std::string, std::less<>> names;
  std::function<Tensor(const std::string& name, const Shared& parameter)> read;
};

// What load and load_safetensors share: the variables checked, then the file opened
// (`open`), its names compared with the variables', every value read, converted and
// checked before the first is assigned, then all assigned together.
LoadReport load_members(std::string_view op, const NamedShared& variables, const fs::path& path,
                        const LoadOptions& options, const std::function<Members()>& open) {
  handles_of(variables, op);
  const Members in_file = open();
  std::set<std::string, std::less<>> expected;
  for (const auto& [name, shared] : variables) expected.insert(name);
  detail::MemberMismatch mismatch = detail::compare_members(in_file.names, expected);
  if (options.strict && !mismatch.empty())
    fail<ValueError>(op, detail::quoted(path), ": the file does not match the parameters: ",
                     mismatch.describe("parameters the file lacks", "members no parameter has"),
                     " (LoadOptions::strict = false skips them)");

  std::vector<Shared> targets;
  std::vector<Tensor> values;
  for (const auto& [name, shared] : variables)
    if (in_file.names.contains(name)) {
      targets.push_back(shared);
      values.push_back(value_for(op, path, name, in_file.read(name, shared), shared, options));
    }
  detail::assign_together(targets, values);
  return {std::move(mismatch.missing), std::move(mismatch.unexpected)};
}

}  // namespace

void save(const NamedShared& variables, const fs::path& path) { save_npz(path, values_of(variables, "save")); }

LoadReport load(const NamedShared& variables, const fs::path& path, const LoadOptions& options) {
  TensorMap arrays;
  return load_members("load", variables, path, options, [&] {
    arrays = load_npz_map(path);
    Members members;
    for (const auto& [name, t] : arrays) members.names.insert(name);
    members.read = [&](const std::string& name, const Shared&) { return arrays.at(name); };
    return members;
  });
}

void save(const Module& module, const fs::path& path) { save(module.named_parameters(), path); }

LoadReport load(const Module& module, const fs::path& path, const LoadOptions& options) {
  return load(module.named_parameters(), path, options);
}

void save_safetensors(const NamedShared& variables, const fs::path& path, const SafetensorsMetadata& metadata) {
  save_safetensors(path, values_of(variables, "save_safetensors"), metadata);
}

LoadReport load_safetensors(const NamedShared& variables, const fs::path& path, const LoadOptions& options) {
  constexpr std::string_view op = "load_safetensors";
  std::optional<detail::SafetensorsReader> file;
  return load_members(op, variables, path, options, [&] {
    file.emplace(path, op);
    Members members;
    for (const auto& e : file->entries()) members.names.insert(e.name);
    members.read = [&](const std::string& name, const Shared& parameter) {
      const detail::SafetensorsEntry& e = *file->find(name);
      // F16 and BF16 become float32 as they are read: checked against the parameter first,
      // under the name the file gives their dtype.
      const bool floating = is_floating(parameter.dtype());
      if (detail::SafetensorsReader::is_half(e) && !(options.convert_dtypes && floating))
        detail::fail_member_dtype(op, path, name, e.dtype, "the parameter", parameter.dtype(), dtype_remedy(floating));
      return file->read(e, true);
    };
    return members;
  });
}

void save_safetensors(const Module& module, const fs::path& path, const SafetensorsMetadata& metadata) {
  save_safetensors(module.named_parameters(), path, metadata);
}

LoadReport load_safetensors(const Module& module, const fs::path& path, const LoadOptions& options) {
  return load_safetensors(module.named_parameters(), path, options);
}

}  // namespace recur
