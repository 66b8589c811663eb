#include <recur/core/npz_names.hpp>

#include <algorithm>

namespace recur::detail {

std::string npz_name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (name.size() + kNpzSuffix.size() > 0xFFFF) return "is longer than 65531 bytes";
  if (name.front() == '/' || name.back() == '/') return "starts or ends with '/'";
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part.empty()) return "has an empty path component ('//')";
    if (part == "." || part == "..") return "has a '.' or '..' path component";
    start = end + 1;
  }
  return "";
}

}  // namespace recur::detail
