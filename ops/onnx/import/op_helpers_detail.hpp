#pragma once
// Small pieces the op families share.
#include <cstdint>
#include <vector>

#include <recur/core/tensor.hpp>
#include <recur/ops/onnx/import/node_context_detail.hpp>

namespace recur::onnx_io::detail {

// A value no gradient flows to, on the current tape.
inline Var constant(const Tensor& t) { return Var(t); }

// Integer arithmetic (ONNX's int and bool types, held as int64) runs in float64 and is
// converted back, exact for |values| < 2^53; such values never carry gradients.
template <class F>
Var integer_via_float64(F&& f, const Var& a) {
  return constant(f(a.value().to(DType::float64)).to(DType::int64));
}
template <class F>
Var integer_via_float64(F&& f, const Var& a, const Var& b) {
  return constant(f(a.value().to(DType::float64), b.value().to(DType::float64)).to(DType::int64));
}

// `v` in dtype `d`: itself; between float32 and float64 recur's differentiable cast; else a
// converted constant, UnsupportedError (naming the node) when that would cut a gradient path
// (a float that needs a gradient made an integer).
Var converted(const NodeContext& c, const Var& v, DType d);
// ValueError naming the node unless a and b share a dtype.
void check_same_dtype(const NodeContext& c, const Var& a, const Var& b);

// An axis attribute or input in [-rank, rank) made non-negative (ValueError otherwise).
std::int64_t normalized_axis(const NodeContext& c, std::int64_t axis, std::int64_t rank);

// The one-element tensor `t` as a number.
double scalar_value(const NodeContext& c, const Var& v, const char* what);
// The same for an integer that must be held exactly (positions, counts): ValueError unless
// `v` is one int64 element.
std::int64_t integer_value(const NodeContext& c, const Var& v, const char* what);

}  // namespace recur::onnx_io::detail
