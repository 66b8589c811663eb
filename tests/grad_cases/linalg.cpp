// Gradient-check rows: matrix products in every supported arrangement.
#include "grad_table.hpp"

namespace recur::testing {
namespace {
std::function<std::vector<Shape>(Rng&)> product(int rank_a, int rank_b, bool ta = false, bool tb = false) {
  return [=](Rng& rng) {
    std::uniform_int_distribution<std::int64_t> d(1, 4);
    const std::int64_t b = d(rng), m = d(rng), k = d(rng), n = d(rng);
    auto mat = [&](int rank, std::int64_t r, std::int64_t c, bool t) {
      Shape s = t ? Shape{c, r} : Shape{r, c};
      if (rank == 3) s.insert(s.begin(), b);
      if (rank == 1) s = {t ? r : c};
      return s;
    };
    Shape sa = rank_a == 1 ? Shape{k} : mat(rank_a, m, k, ta);
    Shape sb = rank_b == 1 ? Shape{k} : mat(rank_b, k, n, tb);
    return std::vector<Shape>{sa, sb};
  };
}
}  // namespace

std::vector<GradCase> linalg_cases() {
  return {
      {"matmul_2d", product(2, 2), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_batched", product(3, 3), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_3d_2d", product(3, 2), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_2d_3d", product(2, 3), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_vec_mat", product(1, 2), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_mat_vec", product(2, 1), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_dot", product(1, 1), [](auto x) { return matmul(x[0], x[1]); }},
      {"matmul_t_a", product(2, 2, true, false), [](auto x) { return matmul_t(x[0], x[1], true, false); }},
      {"matmul_t_b", product(2, 2, false, true), [](auto x) { return matmul_t(x[0], x[1], false, true); }},
      {"matmul_t_ab_batched", product(3, 3, true, true), [](auto x) { return matmul_t(x[0], x[1], true, true); }},
      GradCase{"matmul_chain", product(2, 2),
               [](auto x) { return tanh(matmul(tanh(matmul(x[0], x[1])), transpose(x[1]))); }}
          .covers({"tanh", "transpose"})
          .partial_on_throw(earlier_ops_stay_recorded),
  };
}

}  // namespace recur::testing
