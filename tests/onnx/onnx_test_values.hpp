#pragma once
// Values the importer's tests share: random float64 inputs, int64 constants, and a close
// comparison of float64 results.
#include <gtest/gtest.h>

#include <algorithm>
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

inline Tensor random_tensor(const Shape& shape, std::uint64_t seed, double std = 0.6) {
  Generator gen(seed);
  return normal(shape, 0.0, std, gen, DType::float64);
}

inline Tensor int64_scalar(std::int64_t v) { return full({}, static_cast<double>(v), DType::int64); }

inline Tensor int64_tensor(const std::vector<std::int64_t>& v) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(v.size())}, DType::int64);
  std::copy(v.begin(), v.end(), t.data<std::int64_t>());
  return t;
}

inline void expect_near(const Tensor& got, const Tensor& want, double tolerance = 1e-12) {
  ASSERT_EQ(got.shape(), want.shape());
  const Tensor g = got.to(DType::float64), w = want.to(DType::float64);
  for (std::int64_t i = 0; i < g.numel(); ++i)
    EXPECT_NEAR(g.data<double>()[i], w.data<double>()[i], tolerance) << "element " << i;
}

}  // namespace recur::testing
