#include "grad_table.hpp"

#include <algorithm>
#include <cmath>

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

Rng row_rng(const GradCase& c, std::uint64_t trial) {
  std::uint64_t h = 1469598103934665603ull;  // FNV-1a: the same on every platform, unlike std::hash
  for (unsigned char ch : c.name) h = (h ^ ch) * 1099511628211ull;
  return Rng(h + 7919 * trial);
}

std::function<std::vector<Shape>(Rng&)> fixed(std::vector<Shape> shapes) {
  return [=](Rng&) { return shapes; };
}

Tensor fill(const Shape& shape, Domain d, Rng& rng) {
  Tensor t = Tensor::empty(shape, DType::float64);
  double* p = t.data<double>();
  std::normal_distribution<double> normal;
  std::uniform_real_distribution<double> pos(0.5, 2.0), mag(0.3, 2.0);
  std::bernoulli_distribution sign(0.5);
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    switch (d) {
      case Domain::any: p[i] = normal(rng); break;
      case Domain::positive: p[i] = pos(rng); break;
      case Domain::away_from_zero: p[i] = (sign(rng) ? 1 : -1) * mag(rng); break;
      case Domain::distinct: p[i] = normal(rng); break;
    }
  }
  if (d == Domain::distinct) {  // a shuffled grid 0.1 apart, plus a small jitter
    std::vector<double> grid(t.numel());
    for (std::size_t i = 0; i < grid.size(); ++i) grid[i] = 0.1 * static_cast<double>(i) - 0.05 * grid.size();
    std::shuffle(grid.begin(), grid.end(), rng);
    for (std::int64_t i = 0; i < t.numel(); ++i) p[i] = grid[i] + 0.01 * std::tanh(p[i]);
  }
  return t;
}

std::vector<Tensor> draw_inputs(const GradCase& c, Rng& rng) {
  std::vector<Tensor> inputs;
  for (const auto& s : c.shapes(rng)) inputs.push_back(fill(s, c.domain, rng));
  return inputs;
}

std::vector<std::string> covered_ops(const GradCase& c, const std::vector<std::string>& ops) {
  std::vector<std::string> out = c.also_covers;
  std::string longest;
  for (const auto& op : ops) {
    const bool prefix = c.name.size() > op.size() && c.name.compare(0, op.size(), op) == 0 && c.name[op.size()] == '_';
    if ((c.name == op || prefix) && op.size() > longest.size()) longest = op;
  }
  if (!longest.empty()) out.push_back(longest);
  return out;
}

const std::vector<GradCase>& grad_table() {
  static const std::vector<GradCase> table = [] {
    std::vector<GradCase> all;
    for (auto family : {elementwise_cases, linalg_cases, shape_cases, reduction_cases, indexing_cases, loss_cases,
                        recurrent_cases, scan_face_cases})
      for (auto& c : family()) all.push_back(std::move(c));
    return all;
  }();
  return table;
}

}  // namespace recur::testing
