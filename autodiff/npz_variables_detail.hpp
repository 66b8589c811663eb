#pragma once
// What training checkpoints (checkpoint.hpp) and module files (module_io.hpp, .npz and
// safetensors) share: named shared variables read together to be saved, the members of a
// file checked against the variables they are meant for, and the checked values assigned
// together. Internal.
#include <filesystem>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include <recur/autodiff/shared.hpp>
#include <recur/core/npz.hpp>

namespace recur::detail {

// How messages name a file: "'<path>'".
std::string quoted(const std::filesystem::path& path);

// The values of `variables` (none null), read together under one SharedLock: an
// optimizer step on another thread, which holds the same locks, lands wholly before or
// after. Later writes copy the buffers first, so the values stay as read.
std::vector<Tensor> read_together(const std::vector<Shared>& variables);
// values[i] assigned to variables[i], all under one SharedLock, so that a step on another
// thread sees the old values or the new ones, never a mix. The caller has checked them
// (check_member): nothing can fail part way.
void assign_together(const std::vector<Shared>& variables, const std::vector<Tensor>& values);

// The member `member` of the file `path`, meant for a variable (`holder`, e.g. "the
// variable") of `dtype` and `shape`: DTypeError naming `op`, the file, the member and both
// dtypes (then `dtype_remedy`, if any), ShapeError likewise with both shapes.
void check_member(std::string_view op, const std::filesystem::path& path, std::string_view member, const Tensor& t,
                  DType dtype, const Shape& shape, std::string_view holder, std::string_view dtype_remedy = "");
// The DTypeError check_member throws, for a member whose dtype in the file (`file_dtype`,
// e.g. "float64" or safetensors' "F16") is not `dtype`.
[[noreturn]] void fail_member_dtype(std::string_view op, const std::filesystem::path& path, std::string_view member,
                                    std::string_view file_dtype, std::string_view holder, DType dtype,
                                    std::string_view dtype_remedy = "");

// The names among `expected` that the file lacks, and its members not among `expected`,
// each in name order.
struct MemberMismatch {
  std::vector<std::string> missing, unexpected;
  bool empty() const { return missing.empty() && unexpected.empty(); }
  // "<missing_label> 'a', 'b'; <unexpected_label> 'c'" (each part only when it has names).
  std::string describe(std::string_view missing_label, std::string_view unexpected_label) const;
};
MemberMismatch compare_members(const std::set<std::string, std::less<>>& members,
                               const std::set<std::string, std::less<>>& expected);
MemberMismatch compare_members(const TensorMap& members, const std::set<std::string, std::less<>>& expected);

}  // namespace recur::detail
