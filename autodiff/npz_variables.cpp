#include <recur/autodiff/npz_variables_detail.hpp>

#include <recur/autodiff/shared_lock.hpp>

namespace recur::detail {

std::string quoted(const std::filesystem::path& path) {
  std::string s = "'";  // not "'" + path.string(): GCC 12 warns falsely (-Wrestrict) on that
  return s.append(path.string()).append("'");
}

namespace {

// "'a', 'b'"
std::string listed(const std::vector<std::string>& names) {
  std::string out;
  for (const auto& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

}  // namespace

std::vector<Tensor> read_together(const std::vector<Shared>& variables) {
  const SharedLock lock(variables);
  std::vector<Tensor> values;
  values.reserve(variables.size());
  for (const Shared& s : variables) values.push_back(lock.value(s));
  return values;
}

void assign_together(const std::vector<Shared>& variables, const std::vector<Tensor>& values) {
  const SharedLock lock(variables);
  for (std::size_t i = 0; i < variables.size(); ++i) lock.assign(variables[i], values[i]);
}

void check_member(std::string_view op, const std::filesystem::path& path, std::string_view member, const Tensor& t,
                  DType dtype, const Shape& shape, std::string_view holder, std::string_view dtype_remedy) {
  if (t.dtype() != dtype) fail_member_dtype(op, path, member, name_of(t.dtype()), holder, dtype, dtype_remedy);
  if (t.shape() != shape)
    fail<ShapeError>(op, quoted(path), ": member '", member, "' has shape ", to_string(t.shape()), " in the file, ",
                     holder, " has shape ", to_string(shape));
}

void fail_member_dtype(std::string_view op, const std::filesystem::path& path, std::string_view member,
                       std::string_view file_dtype, std::string_view holder, DType dtype, std::string_view dtype_remedy) {
  fail<DTypeError>(op, quoted(path), ": member '", member, "' is ", file_dtype, " in the file, ", holder, " is ", dtype,
                   dtype_remedy);
}

MemberMismatch compare_members(const std::set<std::string, std::less<>>& members,
                               const std::set<std::string, std::less<>>& expected) {
  MemberMismatch m;
  for (const auto& name : expected)
    if (!members.contains(name)) m.missing.push_back(name);
  for (const auto& name : members)
    if (!expected.contains(name)) m.unexpected.push_back(name);
  return m;
}

MemberMismatch compare_members(const TensorMap& members, const std::set<std::string, std::less<>>& expected) {
  std::set<std::string, std::less<>> names;
  for (const auto& [name, t] : members) names.insert(name);
  return compare_members(names, expected);
}

std::string MemberMismatch::describe(std::string_view missing_label, std::string_view unexpected_label) const {
  std::string out;
  if (!missing.empty()) out.append(missing_label).append(" ").append(listed(missing));
  if (!missing.empty() && !unexpected.empty()) out += "; ";
  if (!unexpected.empty()) out.append(unexpected_label).append(" ").append(listed(unexpected));
  return out;
}

}  // namespace recur::detail
