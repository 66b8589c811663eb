#pragma once
// A tensor's (or a Var's) elements as doubles, for comparing with hand-computed lists.
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

inline std::vector<double> values(const Tensor& t) { return to_vector<double>(t); }
inline std::vector<double> values(const Var& v) { return values(v.value()); }

}  // namespace recur::testing
