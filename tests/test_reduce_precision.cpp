// float32 sums accumulate in double: a sum over millions of elements stays within float32's
// own precision (adding 0.1f four million times one by one in float32 is off by ~2%).
#include <gtest/gtest.h>

#include <recur/recur.hpp>

namespace recur {
namespace {

TEST(ReducePrecision, Float32SumsOfMillionsKeepFloat32Precision) {
  constexpr std::int64_t n = std::int64_t{1} << 22;
  const Tensor x = full({n}, 0.1, DType::float32);
  const double exact = static_cast<double>(n) * static_cast<double>(0.1f);
  EXPECT_NEAR(sum(x).item(), exact, exact * 1e-7);
  EXPECT_NEAR(mean(x).item(), static_cast<double>(0.1f), 1e-7);
  // Along an axis, and the broadcast-gradient path (sum_to).
  const Tensor rows = full({2, n / 2}, 0.1, DType::float32);
  const Tensor per_row = sum(rows, {1});
  EXPECT_NEAR(to_vector<double>(per_row)[1], exact / 2, exact * 1e-7);
  EXPECT_NEAR(sum_to(rows, {1, 1}).item(), exact, exact * 1e-7);
}

}  // namespace
}  // namespace recur
