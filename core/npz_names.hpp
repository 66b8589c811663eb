#pragma once
// The rule for array names in .npz archives (see core/npz.hpp), shared by the writer
// (core/npz.cpp) and the reader (core/npz_read.cpp). Internal.
#include <string>
#include <string_view>

namespace recur::detail {

// Every member of an .npz archive is "<array name>.npy".
inline constexpr std::string_view kNpzSuffix = ".npy";

// Why `name` cannot name an array ("" when it can): it must be a safe relative path.
std::string npz_name_problem(std::string_view name);

}  // namespace recur::detail
