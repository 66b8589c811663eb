#pragma once
// A tensor's (or a Var's) elements as doubles, for comparing with hand-computed lists;
// whether two tensors are the same to the bit (dtype, shape and bytes), and named lists of them.
#include <gtest/gtest.h>

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

// The same names in the same order, each tensor the same to the bit.
inline void expect_same(const NamedTensors& got, const NamedTensors& want) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].first, want[i].first) << "at " << i;
    EXPECT_TRUE(same_bytes(got[i].second, want[i].second)) << want[i].first;
  }
}

}  // namespace recur::testing
