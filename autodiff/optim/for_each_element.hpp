#pragma once
// The one loop behind every optimizer rule and gradient clip: f(a[i], b[i], ...) over
// tensors of one floating dtype and one size, with the element type T picked from the
// dtype at run time. Rules are generic lambdas, so one rule serves float32 and float64.
// Options reach a rule as compile-time flags (with_flags) and the operands are plain
// pointers, so the loop has no branches and the compiler may vectorize it (GCC does so
// for rules with a square root only under -fno-math-errno).
#include <cstdint>
#include <string_view>
#include <tuple>
#include <type_traits>

#include <recur/core/tensor.hpp>

namespace recur::optim::detail {

// An operand the options leave out: the rule gets a scratch element that it never uses.
struct Unused {};

template <class T>
struct Dense {
  T* data;
  T& operator[](std::int64_t i) const { return data[i]; }
};
template <class T>
struct Scratch {
  T* slot;
  T& operator[](std::int64_t) const { return *slot; }
};

// Calls f(std::bool_constant<flags>...) for run-time flags, so that a rule branches on its
// options at compile time: a branch inside the loop would keep it scalar.
template <class F>
void with_flags(F&& f) {
  f();
}
template <class F, class... Rest>
void with_flags(F&& f, bool first, Rest... rest) {
  if (first)
    with_flags([&](auto... b) { f(std::true_type{}, b...); }, rest...);
  else
    with_flags([&](auto... b) { f(std::false_type{}, b...); }, rest...);
}

// Calls f(first[i], rest[i]...) for every i; a const tensor gives const elements, Unused a
// scratch element. Every tensor must be defined (ValueError) and match first's dtype
// (DTypeError; int64 too) and size (ShapeError), naming `op`.
template <class F, class First, class... Rest>
void for_each_element(std::string_view op, F&& f, First& first, Rest&... rest) {
  const std::int64_t n = first.numel();
  dispatch_floating(op, first.dtype(), [&]<class T>() {
    T scratch{};
    auto elements = [&]<class Operand>(Operand& t) {
      if constexpr (std::is_same_v<std::remove_const_t<Operand>, Unused>) {
        return Scratch<T>{&scratch};
      } else {
        using E = std::conditional_t<std::is_const_v<Operand>, const T, T>;
        if (!t.defined()) fail<ValueError>(op, "an update got an undefined buffer");
        if (t.numel() != n) fail<ShapeError>(op, "an update of ", n, " elements got a buffer of ", t.numel());
        return Dense<E>{t.template data<T>()};
      }
    };
    const std::tuple operands{elements(first), elements(rest)...};
    std::apply([&](const auto&... e) {
      for (std::int64_t i = 0; i < n; ++i) f(e[i]...);
    }, operands);
  });
}

}  // namespace recur::optim::detail
