#pragma once
// The runtime element type of a Tensor and the one switch that turns it into a C++ type.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>
#include <type_traits>

#include <recur/core/error.hpp>

namespace recur {

enum class DType : std::uint8_t { float32, float64, int64 };

constexpr std::size_t size_of(DType d) { return d == DType::float32 ? 4 : 8; }
constexpr bool is_floating(DType d) { return d != DType::int64; }
constexpr std::string_view name_of(DType d) {
  switch (d) {
    case DType::float32: return "float32";
    case DType::float64: return "float64";
    case DType::int64: return "int64";
  }
  return "?";
}
inline std::ostream& operator<<(std::ostream& o, DType d) { return o << name_of(d); }

template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::float32; }
template <> constexpr DType dtype_of<double>() { return DType::float64; }
template <> constexpr DType dtype_of<std::int64_t>() { return DType::int64; }

// `dispatch(d, [&]<class T>() { ... })` calls the lambda with T = float, double or int64_t.
template <class F>
decltype(auto) dispatch(DType d, F&& f) {
  switch (d) {
    case DType::float32: return f.template operator()<float>();
    case DType::float64: return f.template operator()<double>();
    case DType::int64: break;
  }
  return f.template operator()<std::int64_t>();
}

// Like dispatch, for kernels that exist only for floating types; `op` names the caller
// in the DTypeError thrown for int64.
template <class F>
decltype(auto) dispatch_floating(std::string_view op, DType d, F&& f) {
  if (d == DType::float64) return f.template operator()<double>();
  if (d != DType::float32) fail<DTypeError>(op, "expects float32 or float64, got ", d);
  return f.template operator()<float>();
}

namespace detail {
[[noreturn]] void fail_integer_conversion(std::string_view op, double value);
}

// `value` as element type D. A float becomes an integer by truncation toward zero; one that
// int64 cannot hold (NaN, +-inf, |v| >= 2^63) would be undefined behaviour in C++, so it is
// a ValueError naming `op` and the value.
template <class D, class S>
D element_cast(S value, std::string_view op) {
  if constexpr (std::is_floating_point_v<S> && std::is_integral_v<D>) {
    static_assert(sizeof(D) == 8, "recur's only integer type is int64");
    if (!(value >= S(-0x1p63) && value < S(0x1p63))) detail::fail_integer_conversion(op, static_cast<double>(value));
  }
  return static_cast<D>(value);
}

}  // namespace recur
