#pragma once
// What an op says of itself: its parameters by name (a slice's bounds, a reduction's axes
// and keepdims, a cell's kind and form), kept on the tape with the op, as JAX's primitives
// carry theirs in bind(). An op struct with data members gives them by defining
//   OpAttributes attributes() const;
// (an op without members has none to give). Readers - the ONNX export, a captured loop
// step - read the op's parameters here instead of guessing them from its values.
// Values are raw, as the op was built: an axis may be negative, a slice's stop past the end,
// and a reader resolves them against the input shapes as the op's forward does.
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <recur/core/small_vector.hpp>

namespace recur {

using AttributeValue = std::variant<bool, std::int64_t, double, std::string, std::vector<std::int64_t>>;

struct OpAttribute {
  std::string_view name;  // a literal of the op's source
  AttributeValue value;
};

class OpAttributes {
 public:
  OpAttributes() = default;
  // Out of line: inlined into each op, GCC's sanitizer builds misreport the variant's copy
  // as maybe-uninitialized.
  OpAttributes(std::initializer_list<OpAttribute> items);

  // ValueError naming `op` and the attribute when it is missing or holds another type.
  template <class T>
  const T& get(std::string_view op, std::string_view name) const {
    const AttributeValue& v = find(op, name);
    if (const T* p = std::get_if<T>(&v)) return *p;
    fail_type(op, name);
  }
  bool has(std::string_view name) const;
  std::span<const OpAttribute> items() const { return {items_.data(), items_.size()}; }
  bool operator==(const OpAttributes& other) const;

 private:
  const AttributeValue& find(std::string_view op, std::string_view name) const;
  [[noreturn]] static void fail_type(std::string_view op, std::string_view name);

  boost::container::small_vector<OpAttribute, 4> items_;
};

// A shape or a list of axes as an attribute value.
template <class Ints>
std::vector<std::int64_t> ints_attribute(const Ints& values) {
  return std::vector<std::int64_t>(values.begin(), values.end());
}

// "axis = 1, keepdims = true": for messages and a printed graph.
std::string to_string(const OpAttributes& attributes);

}  // namespace recur
