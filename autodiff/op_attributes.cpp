#include <recur/autodiff/op_attributes.hpp>
#include <recur/autodiff/op_box.hpp>

#include <algorithm>
#include <optional>
#include <sstream>

#include <recur/core/error.hpp>

namespace recur {

OpAttributes::OpAttributes(std::initializer_list<OpAttribute> items) {
  items_.reserve(items.size());
  for (const OpAttribute& a : items) items_.push_back(a);
}

bool OpAttributes::has(std::string_view name) const {
  return std::any_of(items_.begin(), items_.end(), [&](const OpAttribute& a) { return a.name == name; });
}

const AttributeValue& OpAttributes::find(std::string_view op, std::string_view name) const {
  for (const OpAttribute& a : items_)
    if (a.name == name) return a.value;
  fail<ValueError>(op, "has no attribute '", name, "' (it has: ", to_string(*this), ")");
}

void OpAttributes::fail_type(std::string_view op, std::string_view name) {
  fail<ValueError>(op, "attribute '", name, "' holds a value of another type than the one asked for");
}

bool OpAttributes::operator==(const OpAttributes& other) const {
  return std::equal(items_.begin(), items_.end(), other.items_.begin(), other.items_.end(),
                    [](const OpAttribute& a, const OpAttribute& b) { return a.name == b.name && a.value == b.value; });
}

namespace detail {
std::optional<OpAttributes> no_parameters(const void*) { return OpAttributes{}; }
std::optional<OpAttributes> undescribed_parameters(const void*) { return std::nullopt; }
std::vector<Tensor> single_output(const void*) { return {}; }
bool reads_everything(const void*, std::size_t) { return true; }
}  // namespace detail

std::string to_string(const OpAttributes& attributes) {
  std::ostringstream out;
  bool first = true;
  for (const OpAttribute& a : attributes.items()) {
    out << (first ? "" : ", ") << a.name << " = ";
    first = false;
    std::visit(
        [&]<class T>(const T& v) {
          if constexpr (std::is_same_v<T, bool>) {
            out << (v ? "true" : "false");
          } else if constexpr (std::is_same_v<T, std::vector<std::int64_t>>) {
            out << '[';
            for (std::size_t i = 0; i < v.size(); ++i) out << (i ? ", " : "") << v[i];
            out << ']';
          } else if constexpr (std::is_same_v<T, std::string>) {
            out << '\'' << v << '\'';
          } else {
            out << v;
          }
        },
        a.value);
  }
  return out.str();
}

}  // namespace recur
