#pragma once
// The runtime element type of a Tensor and the one switch that turns it into a C++ type.
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

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

}  // namespace recur
