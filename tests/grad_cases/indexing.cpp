// Gradient-check rows: slice, index, take, gather, concat, stack, split. Besides shapes,
// each draw picks the op's own arguments (axes and indices, negative ones included); the
// shape generator stores them in `Args`, shared with the function it is paired with. Most
// rows square the op's result so that second order goes through the scatter ops' rules.
#include <memory>

#include "grad_table.hpp"

namespace recur::testing {
namespace {

struct Args {
  std::int64_t axis = 0, start = 0, stop = 0, step = 1;
  Tensor indices;
  std::vector<std::int64_t> sizes;
};

std::int64_t uniform(Rng& rng, std::int64_t lo, std::int64_t hi) {  // in [lo, hi]
  return std::uniform_int_distribution<std::int64_t>(lo, hi)(rng);
}
// An axis of a tensor of rank r, negative half of the time.
std::int64_t random_axis(Rng& rng, std::int64_t r) {
  const std::int64_t a = uniform(rng, 0, r - 1);
  return uniform(rng, 0, 1) ? a - r : a;
}
// The size of `axis` (possibly negative) of s.
std::int64_t& size_at(Shape& s, std::int64_t axis) {
  return s[static_cast<std::size_t>(axis < 0 ? axis + static_cast<std::int64_t>(s.size()) : axis)];
}
// int64 indices of `shape` in [-n, n): negatives, and repeats once there are more than n.
Tensor random_indices(Rng& rng, const Shape& shape, std::int64_t n) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(numel(shape)));
  for (auto& i : v) i = uniform(rng, -n, n - 1);
  return from_vector(v, shape);
}

auto squared(const auto& v) { return v * v; }

GradCase slice_case() {
  auto p = std::make_shared<Args>();
  return {"slice",
          [p](Rng& rng) {
            Shape s = random_shape(rng, 1, 3);
            p->axis = random_axis(rng, static_cast<std::int64_t>(s.size()));
            const std::int64_t n = size_at(s, p->axis);
            p->start = uniform(rng, -n - 1, n);  // out-of-range bounds are clamped
            p->stop = uniform(rng, -n, n + 2);
            p->step = uniform(rng, 1, 3);
            return std::vector<Shape>{s};
          },
          [p](auto x) { return squared(slice(x[0], p->axis, p->start, p->stop, p->step)); }};
}

GradCase index_case() {
  auto p = std::make_shared<Args>();
  return {"index",
          [p](Rng& rng) {
            Shape s = random_shape(rng, 1, 3);
            p->axis = random_axis(rng, static_cast<std::int64_t>(s.size()));
            const std::int64_t n = size_at(s, p->axis);
            p->start = uniform(rng, -n, n - 1);
            return std::vector<Shape>{s};
          },
          [p](auto x) { return squared(index(x[0], p->axis, p->start)); }};
}

// x[t] for every t, re-stacked: the way scan reads and writes a sequence.
GradCase index_all_steps_case() {
  return {"index_steps_stack", same_shape(1, 2, 3), [](auto x) {
            std::vector<typename decltype(x)::value_type> steps;
            for (std::int64_t t = 0; t < x[0].size(0); ++t) steps.push_back(squared(index(x[0], 0, t)) * double(t + 1));
            return stack(steps, 0);
          }};
}

GradCase take_case() {
  auto p = std::make_shared<Args>();
  return {"take",
          [p](Rng& rng) {
            Shape s = random_shape(rng, 1, 3);
            p->axis = random_axis(rng, static_cast<std::int64_t>(s.size()));
            const std::int64_t n = size_at(s, p->axis);
            p->indices = random_indices(rng, random_shape(rng, 0, 2), n);
            return std::vector<Shape>{s};
          },
          [p](auto x) { return squared(take(x[0], p->indices, p->axis)); }};
}

// Embedding lookup with repeated ids, and a weight on the output.
GradCase embedding_case() {
  return GradCase{"take_embedding", fixed({{5, 3}, {2, 4, 3}}), [](auto x) {
           const Tensor ids = from_vector<std::int64_t>({0, 4, 4, 1, -1, 0, 2, 0}, {2, 4});
           return squared(take(x[0], ids)) * x[1];
         }}.partial_on_throw(earlier_ops_stay_recorded);
}

GradCase gather_case() {
  auto p = std::make_shared<Args>();
  return {"gather",
          [p](Rng& rng) {
            const Shape s = random_shape(rng, 1, 3);
            const auto r = static_cast<std::int64_t>(s.size());
            p->axis = random_axis(rng, r);
            const std::int64_t ax = p->axis < 0 ? p->axis + r : p->axis;
            Shape is = s;
            for (std::int64_t d = 0; d < r; ++d) is[d] = d == ax ? uniform(rng, 1, 5) : uniform(rng, 1, s[d]);
            p->indices = random_indices(rng, is, s[ax]);
            return std::vector<Shape>{s};
          },
          [p](auto x) { return squared(gather(x[0], p->axis, p->indices)); }};
}

// 2 to 4 inputs that differ only along the joined axis.
GradCase concat_case() {
  auto p = std::make_shared<Args>();
  return {"concat",
          [p](Rng& rng) {
            const Shape s = random_shape(rng, 1, 3);
            const auto r = static_cast<std::int64_t>(s.size());
            p->axis = random_axis(rng, r);
            std::vector<Shape> shapes(static_cast<std::size_t>(uniform(rng, 2, 4)), s);
            for (auto& t : shapes) size_at(t, p->axis) = uniform(rng, 1, 3);
            return shapes;
          },
          [p](auto x) { return squared(concat(x, p->axis)); }};
}

GradCase stack_case() {
  auto p = std::make_shared<Args>();
  return {"stack",
          [p](Rng& rng) {
            const Shape s = random_shape(rng, 0, 3);
            const auto r = static_cast<std::int64_t>(s.size());
            p->axis = uniform(rng, -r - 1, r);
            return std::vector<Shape>(static_cast<std::size_t>(uniform(rng, 2, 3)), s);
          },
          [p](auto x) { return squared(stack(x, p->axis)); }};
}

// Pieces of random sizes (an empty one now and then), each weighted differently.
GradCase split_case() {
  auto p = std::make_shared<Args>();
  return GradCase{"split",
          [p](Rng& rng) {
            Shape s = random_shape(rng, 1, 3);
            p->axis = random_axis(rng, static_cast<std::int64_t>(s.size()));
            std::int64_t left = size_at(s, p->axis);
            p->sizes.clear();
            while (left > 0) {
              p->sizes.push_back(uniform(rng, 0, left));
              left -= p->sizes.back();
            }
            return std::vector<Shape>{s};
          },
          [p](auto x) {
            auto total = sum(x[0]) * 0.0;
            double w = 1;
            for (const auto& piece : split(x[0], p->axis, p->sizes)) total = total + sum(squared(piece)) * (w++);
            return total;
          }}.partial_on_throw(earlier_ops_stay_recorded);
}

// Equal pieces multiplied together: second order has cross terms between the pieces.
GradCase split_equal_case() {
  auto p = std::make_shared<Args>();
  return {"split_equal",
          [p](Rng& rng) {
            Shape s = random_shape(rng, 1, 3);
            p->axis = random_axis(rng, static_cast<std::int64_t>(s.size()));
            p->stop = uniform(rng, 1, 3);  // the number of pieces
            size_at(s, p->axis) = p->stop * uniform(rng, 1, 2);
            return std::vector<Shape>{s};
          },
          [p](auto x) {
            const auto pieces = split(x[0], p->axis, p->stop);
            auto prod = pieces[0];
            for (std::size_t k = 1; k < pieces.size(); ++k) prod = prod * pieces[k];
            return prod * pieces[0];
          }};
}

}  // namespace

std::vector<GradCase> indexing_cases() {
  return {slice_case(),  index_case(),    index_all_steps_case(), take_case(),  embedding_case(),
          gather_case(), concat_case(),   stack_case(),           split_case(), split_equal_case()};
}

}  // namespace recur::testing
