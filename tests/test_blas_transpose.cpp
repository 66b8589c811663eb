// blas::transpose (core/blas.hpp): B = A^T with row strides wider than the rows, against the
// definition element by element, in both precisions; sizes of zero write nothing. And the
// permutations that take it (the last two axes swapped, the others kept), against the
// definition, in every dtype.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include <recur/core/blas.hpp>
#include <recur/core/creation.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

template <class T>
void expect_transposed(std::int64_t rows, std::int64_t cols) {
  const std::int64_t lda = cols + 3, ldb = rows + 5;
  std::vector<T> a(static_cast<std::size_t>(rows * lda));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<T>(i % 1009) - T(500);
  const T untouched = T(-7.25);
  std::vector<T> b(static_cast<std::size_t>(cols * ldb), untouched);
  blas::transpose(rows, cols, a.data(), lda, b.data(), ldb);
  for (std::int64_t i = 0; i < cols; ++i) {
    for (std::int64_t j = 0; j < rows; ++j)
      ASSERT_EQ(b[static_cast<std::size_t>(i * ldb + j)], a[static_cast<std::size_t>(j * lda + i)])
          << rows << " x " << cols << ": B[" << i << ", " << j << "]";
    for (std::int64_t j = rows; j < ldb; ++j)  // past each row of B: not written
      ASSERT_EQ(b[static_cast<std::size_t>(i * ldb + j)], untouched) << rows << " x " << cols << " padding";
  }
}

TEST(BlasTranspose, EqualsTheDefinition) {
  for (const auto& [rows, cols] : std::vector<std::pair<std::int64_t, std::int64_t>>{
           {1, 1}, {1, 7}, {7, 1}, {3, 5}, {64, 64}, {1024, 256}, {130, 33}}) {
    expect_transposed<float>(rows, cols);
    expect_transposed<double>(rows, cols);
  }
}

TEST(BlasTranspose, EmptyWritesNothing) {
  std::vector<float> b(4, 1.5f);
  blas::transpose(0, 3, static_cast<const float*>(nullptr), 3, b.data(), 1);
  blas::transpose(2, 0, static_cast<const float*>(nullptr), 1, b.data(), 2);
  for (float v : b) EXPECT_EQ(v, 1.5f);
}

// out[b, j, i] = x[b, i, j] read through the flat index, for a [batch, rows, cols] x.
void expect_last_two_swapped(const Tensor& x, const Tensor& out) {
  const std::int64_t r = x.rank(), rows = x.shape()[r - 2], cols = x.shape()[r - 1];
  const std::int64_t size = rows * cols, batch = size == 0 ? 0 : x.numel() / size;
  ASSERT_EQ(out.shape()[r - 2], cols);
  ASSERT_EQ(out.shape()[r - 1], rows);
  const Tensor xd = x.to(DType::float64), od = out.to(DType::float64);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t i = 0; i < rows; ++i)
      for (std::int64_t j = 0; j < cols; ++j)
        ASSERT_EQ(od.data<double>()[b * size + j * rows + i], xd.data<double>()[b * size + i * cols + j])
            << to_string(x.shape()) << " batch " << b << " [" << i << ", " << j << "]";
}

TEST(BlasTranspose, PermutationsSwappingTheLastTwoAxes) {
  for (const Shape& shape : std::vector<Shape>{{3, 5}, {1, 9}, {2, 3, 4}, {2, 2, 64, 33}, {0, 4}, {3, 0, 2}})
    for (DType d : {DType::float32, DType::float64, DType::int64}) {
      const Tensor x = reshape(arange(numel(shape), d), shape);
      const std::int64_t r = static_cast<std::int64_t>(shape.size());
      Axes dims;
      for (std::int64_t i = 0; i + 2 < r; ++i) dims.push_back(i);
      dims.push_back(r - 1);
      dims.push_back(r - 2);
      expect_last_two_swapped(x, permute(x, dims));
      expect_last_two_swapped(x, transpose(x));
    }
}

}  // namespace
}  // namespace recur
