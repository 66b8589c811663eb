#pragma once
// The gradient-check table: one row per op (or op variant). Each row draws random input
// shapes (broadcasting and size-1 axes included), fills float64 inputs from its domain and
// runs recur::check_gradients, first and second order.
#include <functional>
#include <random>
#include <span>
#include <string>
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

using Rng = std::mt19937_64;

enum class Domain {
  any,             // N(0, 1)
  positive,        // U(0.5, 2)
  away_from_zero,  // |x| in U(0.3, 2), random sign (kinks of abs, relu, ... avoided)
  distinct,        // N(0,1) values at least 0.05 apart (max/min ties avoided)
};

struct GradCase {
  std::string name;
  std::function<std::vector<Shape>(Rng&)> shapes;
  std::function<Var(std::span<const Var>)> fn;
  Domain domain = Domain::any;
  bool second_order = true;
};

// ---- shape generators --------------------------------------------------------------

// A random shape of rank in [min_rank, max_rank], sizes in [1, 4].
Shape random_shape(Rng& rng, int min_rank = 0, int max_rank = 3);
// A shape that broadcasts with `s`: some axes set to 1, some leading axes dropped.
Shape broadcastable_to(Rng& rng, const Shape& s);
// n inputs of one random shape.
std::function<std::vector<Shape>(Rng&)> same_shape(int n, int min_rank = 0, int max_rank = 3);
// Two inputs that broadcast against each other (either side may be the smaller).
std::function<std::vector<Shape>(Rng&)> broadcast_pair(int min_rank = 0, int max_rank = 3);
// Fixed shapes.
std::function<std::vector<Shape>(Rng&)> fixed(std::vector<Shape> shapes);

// The table: rows from every family file in tests/grad_cases/.
const std::vector<GradCase>& grad_table();

std::vector<GradCase> elementwise_cases();
std::vector<GradCase> linalg_cases();
std::vector<GradCase> shape_cases();
std::vector<GradCase> reduction_cases();
std::vector<GradCase> indexing_cases();
std::vector<GradCase> loss_cases();
std::vector<GradCase> recurrent_cases();

}  // namespace recur::testing
