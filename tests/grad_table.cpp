#include "grad_table.hpp"

namespace recur::testing {

Shape random_shape(Rng& rng, int min_rank, int max_rank) {
  std::uniform_int_distribution<int> rank(min_rank, max_rank), size(1, 4);
  Shape s;
  for (int r = rank(rng), i = 0; i < r; ++i) s.push_back(size(rng));
  return s;
}

Shape broadcastable_to(Rng& rng, const Shape& s) {
  std::uniform_int_distribution<std::size_t> drop(0, s.size());
  std::bernoulli_distribution one(0.4);
  Shape out(s.begin() + static_cast<std::ptrdiff_t>(drop(rng)), s.end());
  for (auto& d : out)
    if (one(rng)) d = 1;
  return out;
}

std::function<std::vector<Shape>(Rng&)> same_shape(int n, int min_rank, int max_rank) {
  return [=](Rng& rng) { return std::vector<Shape>(n, random_shape(rng, min_rank, max_rank)); };
}

std::function<std::vector<Shape>(Rng&)> broadcast_pair(int min_rank, int max_rank) {
  return [=](Rng& rng) {
    const Shape big = random_shape(rng, min_rank, max_rank);
    const Shape small = broadcastable_to(rng, big);
    return std::bernoulli_distribution(0.5)(rng) ? std::vector<Shape>{big, small} : std::vector<Shape>{small, big};
  };
}

std::function<std::vector<Shape>(Rng&)> fixed(std::vector<Shape> shapes) {
  return [=](Rng&) { return shapes; };
}

const std::vector<GradCase>& grad_table() {
  static const std::vector<GradCase> table = [] {
    std::vector<GradCase> all;
    for (auto family : {elementwise_cases, linalg_cases, shape_cases, reduction_cases, indexing_cases, loss_cases,
                        recurrent_cases})
      for (auto& c : family()) all.push_back(std::move(c));
    return all;
  }();
  return table;
}

}  // namespace recur::testing
