#include <recur/core/error.hpp>
#include <recur/core/shape.hpp>

#include <algorithm>

namespace recur {

std::string to_string(const Shape& s) {
  std::string out = "[";
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (i) out += ", ";
    out += std::to_string(s[i]);
  }
  return out + "]";
}

std::ostream& operator<<(std::ostream& o, const Shape& s) { return o << to_string(s); }

namespace detail {
void fail_numel(std::string_view op, const Shape& s) {
  if (std::any_of(s.begin(), s.end(), [](std::int64_t d) { return d < 0; }))
    fail<ShapeError>(op, "shape ", to_string(s), " has a negative size");
  fail<ShapeError>(op, "shape ", to_string(s), " has more elements than an int64 can count");
}
}  // namespace detail

Shape broadcast_shapes(std::string_view op, const Shape& a, const Shape& b, std::string_view a_name,
                       std::string_view b_name) {
  if (a == b) return a;
  const std::size_t rank = std::max(a.size(), b.size());
  Shape out(rank);
  for (std::size_t i = 0; i < rank; ++i) {
    const std::int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const std::int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1)
      fail<ShapeError>(op, "cannot broadcast argument '", a_name, "' of shape ", to_string(a),
                       " with argument '", b_name, "' of shape ", to_string(b));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

std::int64_t normalize_axis(std::string_view op, std::int64_t axis, const Shape& shape,
                            std::string_view arg, std::int64_t extra_rank) {
  const auto rank = static_cast<std::int64_t>(shape.size()) + extra_rank;
  if (axis < -rank || axis >= rank)
    fail<AxisError>(op, "argument '", arg, "' = ", axis, " is out of range for a tensor of rank ",
                    shape.size(), " (shape ", to_string(shape), "; allowed [", -rank, ", ", rank, "))");
  return axis < 0 ? axis + rank : axis;
}

Axes normalize_axes(std::string_view op, const Axes& axes, const Shape& shape) {
  Axes out;
  if (axes.empty()) {
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(shape.size()); ++i) out.push_back(i);
    return out;
  }
  for (auto a : axes) out.push_back(normalize_axis(op, a, shape, "axes"));
  std::sort(out.begin(), out.end());
  // NumPy and PyTorch reject a repeated axis (also written once negative: 1 and -1 of a
  // matrix): reducing an axis twice has no meaning.
  const auto repeated = std::adjacent_find(out.begin(), out.end());
  if (repeated != out.end()) {
    std::string listed;
    for (auto a : axes) listed += (listed.empty() ? "" : ", ") + std::to_string(a);
    fail<AxisError>(op, "argument 'axes' = [", listed, "] names axis ", *repeated, " twice (shape ",
                    to_string(shape), ")");
  }
  return out;
}

Shape contiguous_strides(const Shape& shape) {
  Shape st(shape.size());
  std::int64_t acc = 1;
  for (std::size_t i = shape.size(); i-- > 0;) {
    st[i] = acc;
    acc *= shape[i];
  }
  return st;
}

Shape broadcast_strides(const Shape& shape, const Shape& target) {
  Shape st(target.size(), 0);
  const Shape own = contiguous_strides(shape);
  const std::size_t lead = target.size() - shape.size();
  for (std::size_t i = 0; i < shape.size(); ++i)
    st[lead + i] = shape[i] == 1 && target[lead + i] != 1 ? 0 : own[i];
  return st;
}

}  // namespace recur
