#pragma once
// A tensor's (or a Var's) elements as doubles, for comparing with hand-computed lists; and
// whether two tensors are the same to the bit (dtype, shape and bytes).
#include <cstring>
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

inline std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }
inline std::vector<double> values(const Var& v) { return values(v.value()); }

inline bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

}  // namespace recur::testing
