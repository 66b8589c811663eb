// Dims (core/dims.hpp), the list Shape and Axes are: every operation against std::vector
// doing the same, inline (rank <= 4) and spilled to the heap, including ranges taken from
// the list itself.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>
#include <vector>

#include <recur/core/dims.hpp>

namespace recur {
namespace {

using Ints = std::vector<std::int64_t>;

Ints as_vector(const Dims& d) { return Ints(d.begin(), d.end()); }

// 0..n-1 plus 10, in a Dims and in a vector.
std::pair<Dims, Ints> counting(std::int64_t n) {
  Dims d;
  Ints v;
  for (std::int64_t i = 0; i < n; ++i) {
    d.push_back(i + 10);
    v.push_back(i + 10);
  }
  return {d, v};
}

TEST(Dims, ConstructsAsAVectorWould) {
  EXPECT_TRUE(Dims().empty());
  EXPECT_EQ(as_vector(Dims{2, 3, 4}), (Ints{2, 3, 4}));
  EXPECT_EQ(as_vector(Dims{1, 2, 3, 4, 5, 6, 7}), (Ints{1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(as_vector(Dims(3)), (Ints{0, 0, 0}));
  EXPECT_EQ(as_vector(Dims(6, 7)), Ints(6, 7));
  const Ints from{5, 6, 7, 8, 9};
  EXPECT_EQ(as_vector(Dims(from.begin() + 1, from.end())), (Ints{6, 7, 8, 9}));
}

TEST(Dims, CopiesAndMovesInlineAndOnTheHeap) {
  for (std::int64_t n : {0, 1, 4, 5, 9}) {
    const auto [d, v] = counting(n);
    Dims copy = d;
    EXPECT_EQ(as_vector(copy), v) << n;
    Dims moved = std::move(copy);
    EXPECT_EQ(as_vector(moved), v) << n;
    EXPECT_TRUE(copy.empty()) << n;  // NOLINT(bugprone-use-after-move): a moved-from list is empty
    for (std::int64_t m : {0, 2, 4, 6, 11}) {  // assigned over lists of every kind
      Dims other = counting(m).first;
      other = d;
      EXPECT_EQ(as_vector(other), v) << n << " over " << m;
      Dims target = counting(m).first;
      Dims source = d;
      target = std::move(source);
      EXPECT_EQ(as_vector(target), v) << n << " moved over " << m;
    }
    Dims self = d;
    const Dims& alias = self;
    self = alias;
    EXPECT_EQ(as_vector(self), v) << n;
  }
}

TEST(Dims, InsertsAndErasesAsAVectorWould) {
  for (std::int64_t n : {0, 3, 4, 6}) {
    for (std::int64_t at = 0; at <= n; ++at) {
      auto [d, v] = counting(n);
      d.insert(d.begin() + at, 99);
      v.insert(v.begin() + at, 99);
      EXPECT_EQ(as_vector(d), v);
      d.insert(d.begin() + at, 2, 7);
      v.insert(v.begin() + at, 2, 7);
      EXPECT_EQ(as_vector(d), v);
      d.insert(d.begin() + at, {1, 2, 3});
      v.insert(v.begin() + at, {1, 2, 3});
      EXPECT_EQ(as_vector(d), v);
      d.erase(d.begin() + at);
      v.erase(v.begin() + at);
      EXPECT_EQ(as_vector(d), v);
      d.erase(d.begin() + at, d.begin() + at + 2);
      v.erase(v.begin() + at, v.begin() + at + 2);
      EXPECT_EQ(as_vector(d), v);
    }
  }
}

TEST(Dims, TakesRangesOfItself) {
  for (std::int64_t n : {3, 4, 5, 8}) {
    auto [d, v] = counting(n);
    // Its own elements inserted into it, through a reallocation (from 4 on) or not.
    d.insert(d.begin() + 1, d.begin(), d.end());
    const Ints copy = v;
    v.insert(v.begin() + 1, copy.begin(), copy.end());
    EXPECT_EQ(as_vector(d), v) << n;
    d.assign(d.begin() + 2, d.end());
    v.assign(v.begin() + 2, v.end());
    EXPECT_EQ(as_vector(d), v) << n;
    d.push_back(d[0]);
    v.push_back(v[0]);
    EXPECT_EQ(as_vector(d), v) << n;
  }
}

TEST(Dims, ResizesAssignsAndCompares) {
  auto [d, v] = counting(3);
  d.resize(7, 5);
  v.resize(7, 5);
  EXPECT_EQ(as_vector(d), v);
  d.resize(2);
  v.resize(2);
  EXPECT_EQ(as_vector(d), v);
  d.assign(6, 1);
  EXPECT_EQ(as_vector(d), Ints(6, 1));
  d = {4, 5};
  EXPECT_EQ(as_vector(d), (Ints{4, 5}));
  d.pop_back();
  EXPECT_EQ(d.back(), 4);
  EXPECT_EQ(d.front(), 4);
  d.clear();
  EXPECT_TRUE(d.empty());
  EXPECT_EQ((Dims{1, 2, 3}), (Dims{1, 2, 3}));
  EXPECT_NE((Dims{1, 2, 3}), (Dims{1, 2}));
  EXPECT_LT((Dims{1, 2}), (Dims{1, 2, 3}));
  EXPECT_LT((Dims{1, 2, 3, 4, 5}), (Dims{1, 3}));
  const Dims six{1, 2, 3, 4, 5, 6};
  EXPECT_EQ(Ints(six.rbegin(), six.rend()), (Ints{6, 5, 4, 3, 2, 1}));
}

}  // namespace
}  // namespace recur
