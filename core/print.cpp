// operator<<(ostream, Tensor): NumPy's repr layout with the shape added, e.g.
//   tensor([[1. , 2.5],
//           [3. , 4. ]], dtype=float32, shape=[2, 2])
// Floats share one format: fixed point with as many decimals as the most precise element
// needs (shortest round-trip digits of its dtype, at most 8), or scientific notation when
// the magnitudes call for it (NumPy's rule). The stream's own flags are ignored.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <recur/core/tensor.hpp>

namespace recur {
namespace {

constexpr std::int64_t kSummaryThreshold = 1000;  // more elements than this: summarise
constexpr std::int64_t kEdgeItems = 3;            // elements kept at each end of a summarised axis
constexpr int kPrecision = 8;                     // most fractional digits printed
constexpr std::size_t kLineWidth = 75;
constexpr std::string_view kPrefix = "tensor(";

// The indices printed along an axis of size n; -1 stands for "...".
std::vector<std::int64_t> shown_indices(std::int64_t n, bool summarise) {
  std::vector<std::int64_t> idx;
  if (summarise && n > 2 * kEdgeItems) {
    for (std::int64_t i = 0; i < kEdgeItems; ++i) idx.push_back(i);
    idx.push_back(-1);
    for (std::int64_t i = n - kEdgeItems; i < n; ++i) idx.push_back(i);
  } else {
    for (std::int64_t i = 0; i < n; ++i) idx.push_back(i);
  }
  return idx;
}

template <class T, class... Precision>
std::string chars(T v, std::chars_format format, Precision... precision) {
  char buf[512];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, format, precision...);
  return std::string(buf, r.ptr);
}

// Digits after the '.' of a fixed or scientific number string, trailing zeros dropped.
int fraction_digits(const std::string& s) {
  const auto dot = s.find('.');
  if (dot == std::string::npos) return 0;
  auto end = std::min(s.find('e'), s.size());
  while (end > dot + 1 && s[end - 1] == '0') --end;
  return static_cast<int>(end - dot - 1);
}

// One format shared by all printed elements.
template <class T>
class NumberFormat {
 public:
  explicit NumberFormat(const std::vector<T>& values) {
    if constexpr (std::is_floating_point_v<T>) {
      double max_abs = 0, min_abs = INFINITY;
      for (T v : values) {
        if (!std::isfinite(v)) continue;
        const double a = std::abs(static_cast<double>(v));
        max_abs = std::max(max_abs, a);
        if (a > 0) min_abs = std::min(min_abs, a);
      }
      scientific_ = max_abs >= 1e8 || (min_abs < INFINITY && (min_abs < 1e-4 || max_abs / min_abs > 1e3));
      const auto format = scientific_ ? std::chars_format::scientific : std::chars_format::fixed;
      for (T v : values)
        if (std::isfinite(v)) {
          // The shortest digits that read back as v, capped at kPrecision.
          int d = fraction_digits(chars(v, format));
          if (d > kPrecision) d = fraction_digits(chars(v, format, kPrecision));
          digits_ = std::max(digits_, d);
        }
    }
  }

  std::string operator()(T v) const {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v)) return "nan";
      if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
      std::string s = chars(v, scientific_ ? std::chars_format::scientific : std::chars_format::fixed, digits_);
      if (digits_ > 0) return s;
      const auto e = s.find('e');  // NumPy writes "1." and "1.e+10"
      return e == std::string::npos ? s + "." : s.substr(0, e) + "." + s.substr(e);
    } else {
      return std::to_string(v);
    }
  }

 private:
  bool scientific_ = false;
  int digits_ = 0;
};

template <class T>
class Printer {
 public:
  explicit Printer(const Tensor& t) : x_(t.data<T>()), shape_(t.shape()), strides_(contiguous_strides(t.shape())) {
    for (auto n : shape_) shown_.push_back(shown_indices(n, t.numel() > kSummaryThreshold));
    std::vector<T> values;
    if (shape_.empty()) values.push_back(x_[0]);
    else collect(0, 0, values);
    format_.emplace(values);
    for (T v : values) width_ = std::max(width_, (*format_)(v).size());
  }

  void print(std::string& out) const {
    if (shape_.empty()) out += (*format_)(x_[0]);
    else emit(out, 0, 0);
  }

 private:
  void collect(std::size_t axis, std::int64_t offset, std::vector<T>& values) const {
    for (auto i : shown_[axis]) {
      if (i < 0) continue;
      const std::int64_t at = offset + i * strides_[axis];
      if (axis + 1 == shape_.size()) values.push_back(x_[at]);
      else collect(axis + 1, at, values);
    }
  }

  void emit(std::string& out, std::size_t axis, std::int64_t offset) const {
    const std::size_t indent = kPrefix.size() + axis + 1;
    const bool last = axis + 1 == shape_.size();
    out += '[';
    bool first = true;
    for (auto i : shown_[axis]) {
      std::string cell = "...";
      if (i >= 0 && last) {
        cell = (*format_)(x_[offset + i * strides_[axis]]);
        cell.insert(0, width_ - cell.size(), ' ');
      }
      if (!first) {
        out += ',';
        if (!last) {
          out.append(shape_.size() - axis - 1, '\n');
          out.append(indent, ' ');
        } else if (column(out) + 1 + cell.size() + 1 > kLineWidth) {
          out += '\n';
          out.append(indent, ' ');
        } else {
          out += ' ';
        }
      }
      first = false;
      if (i >= 0 && !last) emit(out, axis + 1, offset + i * strides_[axis]);
      else out += cell;
    }
    out += ']';
  }

  static std::size_t column(const std::string& s) {
    const auto nl = s.rfind('\n');
    return nl == std::string::npos ? s.size() : s.size() - nl - 1;
  }

  const T* x_;
  const Shape& shape_;
  Shape strides_;
  std::vector<std::vector<std::int64_t>> shown_;
  std::optional<NumberFormat<T>> format_;
  std::size_t width_ = 0;
};

}  // namespace

std::ostream& operator<<(std::ostream& o, const Tensor& t) {
  if (!t.defined()) return o << kPrefix << "undefined)";
  std::string out(kPrefix);
  if (t.numel() == 0) out += "[]";
  else dispatch(t.dtype(), [&]<class T>() { Printer<T>(t).print(out); });
  out += ", dtype=";
  out += name_of(t.dtype());
  out += ", shape=" + to_string(t.shape()) + ")";
  return o << out;
}

}  // namespace recur
