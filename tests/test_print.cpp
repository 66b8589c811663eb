// operator<< for Tensor: NumPy's repr layout plus dtype and shape, one number format per
// tensor, and "..." summaries for more than 1000 elements.
#include <gtest/gtest.h>

#include <cmath>
#include <iomanip>
#include <sstream>
#include <string>

#include <recur/recur.hpp>

namespace recur {
namespace {

std::string str(const Tensor& t) {
  std::ostringstream o;
  o << t;
  return o.str();
}

TEST(Print, SmallTensors) {
  EXPECT_EQ(str(tensor({{1, 2, 3}, {4, 5, 6}})),
            "tensor([[1., 2., 3.],\n"
            "        [4., 5., 6.]], dtype=float32, shape=[2, 3])");
  EXPECT_EQ(str(tensor({0.5, -1.25}, DType::float64)), "tensor([ 0.50, -1.25], dtype=float64, shape=[2])");
  EXPECT_EQ(str(arange(4)), "tensor([0, 1, 2, 3], dtype=int64, shape=[4])");
  EXPECT_EQ(str(from_vector<std::int64_t>({-7, 120}, {2})), "tensor([ -7, 120], dtype=int64, shape=[2])");
}

TEST(Print, ZeroDimensionalEmptyAndUndefined) {
  EXPECT_EQ(str(scalar(2.5)), "tensor(2.5, dtype=float32, shape=[])");
  EXPECT_EQ(str(scalar(3, DType::int64)), "tensor(3, dtype=int64, shape=[])");
  EXPECT_EQ(str(zeros({2, 0})), "tensor([], dtype=float32, shape=[2, 0])");
  EXPECT_EQ(str(zeros({0}, DType::int64)), "tensor([], dtype=int64, shape=[0])");
  EXPECT_EQ(str(Tensor()), "tensor(undefined)");
}

TEST(Print, FloatFormats) {
  // Shortest digits that read back in the tensor's own dtype, at most 8 decimals.
  EXPECT_EQ(str(tensor({123456.789})), "tensor([123456.79], dtype=float32, shape=[1])");
  EXPECT_EQ(str(tensor({1.0 / 3}, DType::float64)), "tensor([0.33333333], dtype=float64, shape=[1])");
  EXPECT_EQ(str(tensor({-0.0, 0.0})), "tensor([-0.,  0.], dtype=float32, shape=[2])");
  // Scientific when the magnitudes call for it, as NumPy decides.
  EXPECT_EQ(str(tensor({1e-5, 1.0})), "tensor([1.e-05, 1.e+00], dtype=float32, shape=[2])");
  EXPECT_EQ(str(tensor({1e10, 1.5}, DType::float64)), "tensor([1.0e+10, 1.5e+00], dtype=float64, shape=[2])");
  EXPECT_EQ(str(tensor({1.0, 2000.0})), "tensor([1.e+00, 2.e+03], dtype=float32, shape=[2])");
  EXPECT_EQ(str(tensor({NAN, INFINITY, -INFINITY, 1.5})), "tensor([ nan,  inf, -inf,  1.5], dtype=float32, shape=[4])");
}

TEST(Print, RankThreeSeparatesBlocksWithABlankLine) {
  EXPECT_EQ(str(arange(12).view({2, 3, 2})),
            "tensor([[[ 0,  1],\n"
            "         [ 2,  3],\n"
            "         [ 4,  5]],\n"
            "\n"
            "        [[ 6,  7],\n"
            "         [ 8,  9],\n"
            "         [10, 11]]], dtype=int64, shape=[2, 3, 2])");
}

TEST(Print, LongRowsWrapAt75Columns) {
  EXPECT_EQ(str(arange(0.0, 30.0, 1.0, DType::float64)),
            "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12.,\n"
            "        13., 14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25.,\n"
            "        26., 27., 28., 29.], dtype=float64, shape=[30])");
  std::istringstream lines(str(arange(1000)));
  for (std::string line; std::getline(lines, line);)
    if (line.find("dtype=") == std::string::npos) {
      EXPECT_LE(line.size(), 75u) << line;
    }
}

TEST(Print, SummarisesMoreThan1000Elements) {
  EXPECT_EQ(str(arange(1001)), "tensor([   0,    1,    2, ...,  998,  999, 1000], dtype=int64, shape=[1001])");
  EXPECT_EQ(str(arange(2500).view({50, 50})),
            "tensor([[   0,    1,    2, ...,   47,   48,   49],\n"
            "        [  50,   51,   52, ...,   97,   98,   99],\n"
            "        [ 100,  101,  102, ...,  147,  148,  149],\n"
            "        ...,\n"
            "        [2350, 2351, 2352, ..., 2397, 2398, 2399],\n"
            "        [2400, 2401, 2402, ..., 2447, 2448, 2449],\n"
            "        [2450, 2451, 2452, ..., 2497, 2498, 2499]], dtype=int64, shape=[50, 50])");
  // 1000 elements are printed in full; axes of at most 6 stay whole in a summary.
  EXPECT_EQ(str(arange(1000)).find("..."), std::string::npos);
  const std::string s = str(arange(2002).view({2, 1001}));
  EXPECT_EQ(s.rfind("[[   0,    1,    2, ...,  998,  999, 1000],", 7), 7u) << s;
  EXPECT_NE(s.find("[1001, 1002, 1003, ..., 1999, 2000, 2001]]"), std::string::npos) << s;
}

TEST(Print, ViewsPrintTheirOwnElements) {
  EXPECT_EQ(str(arange(6).view({3, 2})[1]), "tensor([2, 3], dtype=int64, shape=[2])");
}

TEST(Print, IgnoresAndKeepsTheStreamFormatting) {
  std::ostringstream o;
  o << std::hex << std::scientific << std::setprecision(2) << arange(12).view({1, 12})[0] << ' ' << 255;
  EXPECT_EQ(o.str(), "tensor([ 0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11], dtype=int64, shape=[12]) ff");
}

}  // namespace
}  // namespace recur
