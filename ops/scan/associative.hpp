#pragma once
// JAX's lax.associative_scan: the inclusive prefix combination of elems under an
// associative fn, computed by the parallel (odd-even) recursion in O(log n) rounds of
// whole-tensor ops.
//
//   Var ys = associative_scan([](const Var& x, const Var& y) { return x + y; }, xs);
//   auto [a, b] = associative_scan(compose, std::pair{as, bs}, {.axis = 1});
//
// elems is a tree of Vars (a Var, std::pair / std::tuple / std::vector of trees, as in
// jax::scan; a braced list is a std::vector<Var>) whose leaves all have the same length n
// along `axis` (negative counts from the back of each leaf). fn(x, y) takes two trees of
// elems' structure, each leaf a slice of the leaves along `axis`, x's elements coming
// before y's, and returns one tree of that structure and of those shapes, combining them
// elementwise along the axis. The result has elems' structure and shapes:
//   result[i] = elems[0] . elems[1] . ... . elems[i]        (. is fn)
// reverse scans from the end (JAX: reverse the axis, scan, reverse back):
//   result[i] = elems[n-1] . elems[n-2] . ... . elems[i]
// fn is called O(log n) times on whole slices, and everything is recorded with recur's
// ops, so the result is differentiable to any order. fn must be associative; the result
// is then the sequential fold's up to rounding.
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <recur/ops/scan/jax.hpp>

namespace recur {

struct AssociativeScanOptions {
  bool reverse = false;
  std::int64_t axis = 0;
};

namespace associative_detail {
// fn on leaves: two lists of leaves in, one out.
using FlatFn = std::function<std::vector<Var>(std::span<const Var> x, std::span<const Var> y)>;
// The scan on leaves (ops/scan/associative.cpp); paths name the leaves in messages.
std::vector<Var> associative_scan(const FlatFn& fn, std::span<const Var> elems, std::span<const std::string> paths,
                                  const AssociativeScanOptions& options);
}  // namespace associative_detail

// The same on a flat list of leaves (named elems[0], elems[1], ... in messages): fn takes
// and returns lists of leaves in elems' order.
std::vector<Var> associative_scan(const associative_detail::FlatFn& fn, std::span<const Var> elems,
                                  const AssociativeScanOptions& options = {});

template <class F, class Elems = std::vector<Var>>
  requires jax_tree::IsTree<Elems> && std::is_convertible_v<std::invoke_result_t<F&, const Elems&, const Elems&>, Elems>
Elems associative_scan(F&& fn, const Elems& elems, const AssociativeScanOptions& options = {}) {
  const std::vector<Var> leaves = jax_tree::leaves(elems);
  auto flat = [&](std::span<const Var> x, std::span<const Var> y) {
    const Elems combined = fn(jax_tree::unflatten(elems, x), jax_tree::unflatten(elems, y));
    return jax_tree::leaves(combined);
  };
  return jax_tree::unflatten(elems,
                             associative_detail::associative_scan(flat, leaves, jax_tree::paths(elems, "elems"), options));
}

namespace jax {
using recur::associative_scan;
using AssociativeScanOptions = recur::AssociativeScanOptions;
}  // namespace jax

}  // namespace recur
