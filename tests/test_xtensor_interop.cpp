// recur <-> xtensor: adopting and viewing are zero-copy (same data pointer), the other
// directions copy, and the adopted buffer lives exactly as long as its last Tensor.
#include <gtest/gtest.h>

#include <xtensor/xarray.hpp>
#include <xtensor/xbuilder.hpp>

#include <recur/recur.hpp>

namespace recur {
namespace {

TEST(XtensorInterop, FromXarrayRvalueAdoptsTheBuffer) {
  xt::xarray<double> a = {{1.0, 2.0, 3.0}, {4.0, 5.0, 6.0}};
  const double* buffer = a.data();
  const Tensor t = from_xarray(std::move(a));
  EXPECT_EQ(t.data<double>(), buffer) << "the buffer was copied";
  EXPECT_EQ(t.dtype(), DType::float64);
  EXPECT_EQ(t.shape(), (Shape{2, 3}));
  EXPECT_EQ(t.at({1, 2}), 6.0);
  EXPECT_EQ(t.storage()->bytes(), 6 * sizeof(double));
}

TEST(XtensorInterop, AdoptedBufferOutlivesTheFirstTensor) {
  Tensor row;
  const std::int64_t* buffer = nullptr;
  {
    xt::xarray<std::int64_t> a = xt::arange<std::int64_t>(12);
    a.reshape({3, 4});
    buffer = a.data();
    const Tensor t = from_xarray(std::move(a));
    row = t[2];  // shares the adopted storage
  }
  EXPECT_EQ(row.data<std::int64_t>(), buffer + 8);
  EXPECT_EQ(to_vector<std::int64_t>(row), (std::vector<std::int64_t>{8, 9, 10, 11}));
}

TEST(XtensorInterop, FromXarrayLvalueCopies) {
  const xt::xarray<float> a = {{1.5f, -2.0f}};
  const Tensor t = from_xarray(a);
  EXPECT_NE(t.data<float>(), a.data());
  EXPECT_EQ(t.dtype(), DType::float32);
  EXPECT_EQ(to_vector<float>(t), (std::vector<float>{1.5f, -2.0f}));
  EXPECT_EQ(t.shape(), (Shape{1, 2}));
}

TEST(XtensorInterop, ZeroDimensionalAndEmptyArrays) {
  const Tensor s = from_xarray(xt::xarray<double>(2.5));
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.item(), 2.5);
  const Tensor e = from_xarray(xt::xarray<float>::from_shape({0, 3}));
  EXPECT_EQ(e.shape(), (Shape{0, 3}));
  EXPECT_EQ(as_xarray<float>(e).size(), 0u);
  EXPECT_EQ(to_xarray<double>(scalar(4.0))(), 4.0);
}

TEST(XtensorInterop, AsXarrayAliasesTheTensor) {
  const Tensor t = arange(0.0, 6.0, 1.0, DType::float64).view({2, 3});
  const auto v = as_xarray<double>(t);
  EXPECT_EQ(v.data(), t.data<double>()) << "as_xarray copied";
  EXPECT_EQ(v.dimension(), 2u);
  EXPECT_EQ(v(1, 2), 5.0);
  // The view keeps the buffer alive on its own.
  auto w = as_xarray<double>(arange(0.0, 3.0, 1.0, DType::float64));
  EXPECT_EQ(w(2), 2.0);
  // Row views alias the right part of the buffer; xtensor expressions read through them.
  const Tensor row = t[1];
  const xt::xarray<double> doubled = 2.0 * as_xarray<double>(row);
  EXPECT_EQ(doubled, (xt::xarray<double>{6.0, 8.0, 10.0}));
  EXPECT_THROW(as_xarray<float>(t), DTypeError);
}

TEST(XtensorInterop, ToXarrayCopiesAndConverts) {
  const Tensor t = arange(6).view({3, 2});
  const xt::xarray<std::int64_t> a = to_xarray<std::int64_t>(t);
  EXPECT_NE(a.data(), t.data<std::int64_t>());
  EXPECT_EQ(a, (xt::xarray<std::int64_t>{{0, 1}, {2, 3}, {4, 5}}));
  const xt::xarray<double> d = to_xarray<double>(t);
  EXPECT_EQ(d(2, 1), 5.0);
  EXPECT_THROW(to_xarray<double>(Tensor()), ValueError);
  // Round trip through both copies.
  EXPECT_TRUE(allclose(from_xarray(to_xarray<float>(t)), t.to(DType::float32)));
}

}  // namespace
}  // namespace recur
