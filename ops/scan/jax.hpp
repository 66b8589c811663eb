#pragma once
// JAX's face of scan: jax.lax.scan(f, init, xs, length, reverse).
//
//   auto [carry, ys] = jax::scan(f, init, xs, {.length, .reverse, .truncate_gradient, .checkpoint});
//
// recur::scan(f, init, xs, options) is the short form (messages then say "scan (jax)").
// As with Theano's face (theano.hpp), the argument types live in recur and are named in
// recur::jax too: jax::ScanOptions is JaxScanOptions, jax::no_xs is no_xs.
//
// f(carry, x) returns std::pair{new_carry, y} (or a 2-tuple). carry, x and y are trees: a
// Var, a std::tuple / std::pair / std::vector of trees. x is one slice of xs along its
// leading axis (every leaf of xs must have the same length); the result's ys has y's
// structure with every leaf stacked on a new leading axis. Without xs, pass recur::no_xs
// and .length; f is then called as f(carry). The carry must keep its structure, and every
// leaf its shape and dtype (ShapeError naming the leaf, e.g. "carry[1]").
//
// reverse runs from the last slice to the first and returns ys so that ys[t] still belongs
// to xs[t] (JAX: "equivalent to reversing the leading axes of xs and ys"). With zero steps f
// is called once on zeros to learn y's shapes, nothing of that call is kept (JAX traces f).
// A braced init or xs ({h, c}) is a std::vector<Var>.
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include <recur/ops/scan/types.hpp>

namespace recur {

// The absent xs of scan(f, init, no_xs, {.length = n}).
struct NoXs {};
inline constexpr NoXs no_xs{};

// Every member has a default (`{}` at least): designated initializers may leave any out
// without GCC's -Wmissing-field-initializers.
struct JaxScanOptions {
  std::optional<std::int64_t> length{};  // must agree with xs; required without xs
  bool reverse = false;
  std::int64_t truncate_gradient = -1;  // k >= 0: backpropagate through the last k steps only
  Checkpoint checkpoint{};              // recompute instead of keeping every step
  std::optional<Capture> capture{};     // record the step once, replay it (types.hpp); unset: the default
  SequenceLengths lengths{};            // per batch element: steps it runs (types.hpp)
};

// ---- trees: a structure of Vars <-> its leaves in order ----------------------------------
namespace jax_tree {

template <class T>
struct Tree;  // specialized below; no primary definition: other types are not trees

template <class T>
concept IsTree = requires { Tree<T>::is_tree; } && Tree<T>::is_tree;

// Flattens child i of a node at path `at` (paths only when asked: "carry" -> "carry[i]").
template <class T>
void flatten_child(const T& c, std::size_t i, std::vector<Var>& leaves, std::vector<std::string>* paths,
                   const std::string* at) {
  const std::string path = paths ? *at + "[" + std::to_string(i) + "]" : std::string();
  Tree<T>::flatten(c, leaves, paths, &path);
}

template <>
struct Tree<Var> {
  static constexpr bool is_tree = true;
  static void flatten(const Var& v, std::vector<Var>& leaves, std::vector<std::string>* paths, const std::string* at) {
    leaves.push_back(v);
    if (paths) paths->push_back(*at);
  }
  static Var unflatten(const Var&, std::span<const Var> leaves, std::size_t& pos) { return leaves[pos++]; }
};

template <class... Ts>
struct Tree<std::tuple<Ts...>> {
  static constexpr bool is_tree = (IsTree<Ts> && ...);
  static void flatten(const std::tuple<Ts...>& t, std::vector<Var>& leaves, std::vector<std::string>* paths,
                      const std::string* at) {
    [&]<std::size_t... I>(std::index_sequence<I...>) {
      (flatten_child(std::get<I>(t), I, leaves, paths, at), ...);
    }(std::index_sequence_for<Ts...>{});
  }
  static std::tuple<Ts...> unflatten(const std::tuple<Ts...>& like, std::span<const Var> leaves, std::size_t& pos) {
    return [&]<std::size_t... I>(std::index_sequence<I...>) {  // braces: evaluated left to right
      return std::tuple<Ts...>{Tree<Ts>::unflatten(std::get<I>(like), leaves, pos)...};
    }(std::index_sequence_for<Ts...>{});
  }
};

template <class A, class B>
struct Tree<std::pair<A, B>> {
  static constexpr bool is_tree = IsTree<A> && IsTree<B>;
  static void flatten(const std::pair<A, B>& p, std::vector<Var>& leaves, std::vector<std::string>* paths,
                      const std::string* at) {
    flatten_child(p.first, 0, leaves, paths, at);
    flatten_child(p.second, 1, leaves, paths, at);
  }
  static std::pair<A, B> unflatten(const std::pair<A, B>& like, std::span<const Var> leaves, std::size_t& pos) {
    return std::pair<A, B>{Tree<A>::unflatten(like.first, leaves, pos), Tree<B>::unflatten(like.second, leaves, pos)};
  }
};

template <class T>
struct Tree<std::vector<T>> {
  static constexpr bool is_tree = IsTree<T>;
  static void flatten(const std::vector<T>& v, std::vector<Var>& leaves, std::vector<std::string>* paths,
                      const std::string* at) {
    for (std::size_t i = 0; i < v.size(); ++i) flatten_child(v[i], i, leaves, paths, at);
  }
  static std::vector<T> unflatten(const std::vector<T>& like, std::span<const Var> leaves, std::size_t& pos) {
    std::vector<T> out;
    out.reserve(like.size());
    for (const auto& c : like) out.push_back(Tree<T>::unflatten(c, leaves, pos));
    return out;
  }
};

template <class T>
std::vector<Var> leaves(const T& tree) {
  std::vector<Var> out;
  Tree<T>::flatten(tree, out, nullptr, nullptr);
  return out;
}
// The leaves' paths ("carry[0][1]") for messages.
template <class T>
std::vector<std::string> paths(const T& tree, const std::string& root) {
  std::vector<Var> ignored;
  std::vector<std::string> out;
  Tree<T>::flatten(tree, ignored, &out, &root);
  return out;
}
// A tree shaped like `like` whose leaves are `leaves`, in order.
template <class T>
T unflatten(const T& like, std::span<const Var> leaves) {
  std::size_t pos = 0;
  return Tree<T>::unflatten(like, leaves, pos);
}

}  // namespace jax_tree

// ---- the non-template part (ops/scan/jax.cpp) -------------------------------------------
namespace jax_detail {

// f on leaves: the carry's and the slice's leaves in, the new carry's and y's leaves out.
struct FlatOut {
  std::vector<Var> carry, ys;
};
using FlatStep = std::function<FlatOut(std::span<const Var> carry, std::span<const Var> x)>;

struct FlatScan {
  std::string_view face;  // the entry point called, for messages
  std::vector<Var> init, xs;
  std::vector<std::string> init_paths, xs_paths;
  bool has_xs = true;
  // ys' paths, filled by the step on its first call (y's structure is f's to decide).
  const std::vector<std::string>* ys_paths = nullptr;
};

struct FlatResult {
  std::vector<Var> carry, ys;
};

FlatResult scan(const FlatStep& f, const FlatScan& in, const JaxScanOptions& options);

// What f returns: f(carry, x), or f(carry) without xs.
template <class F, class Carry, class Xs>
struct StepReturn {
  using type = std::remove_cvref_t<std::invoke_result_t<F&, const Carry&, const Xs&>>;
};
template <class F, class Carry>
struct StepReturn<F, Carry, NoXs> {
  using type = std::remove_cvref_t<std::invoke_result_t<F&, const Carry&>>;
};

// What scan accepts as init and xs.
template <class Carry, class Xs>
concept ScanTrees = jax_tree::IsTree<Carry> && (jax_tree::IsTree<Xs> || std::is_same_v<Xs, NoXs>);

// scan on trees, as the entry point `face`: flattens, runs on leaves, rebuilds.
template <class F, class Carry, class Xs>
auto scan_trees(std::string_view face, F& f, const Carry& init, const Xs& xs, const JaxScanOptions& options) {
  constexpr bool has_xs = !std::is_same_v<Xs, NoXs>;
  using R = typename jax_detail::StepReturn<std::remove_reference_t<F>, Carry, Xs>::type;
  using Y = std::remove_cvref_t<std::tuple_element_t<1, R>>;
  static_assert(std::tuple_size_v<R> == 2 && jax_tree::IsTree<Y>,
                "f must return a pair (new carry, y) whose y is a tree of Vars");

  FlatScan in;
  in.face = face;
  in.init = jax_tree::leaves(init);
  in.init_paths = jax_tree::paths(init, "carry");
  if constexpr (has_xs) {
    in.xs = jax_tree::leaves(xs);
    in.xs_paths = jax_tree::paths(xs, "xs");
  }
  in.has_xs = has_xs;
  std::optional<Y> y_like;  // y's structure, from f's first call
  std::vector<std::string> ys_paths;
  in.ys_paths = &ys_paths;

  auto step = [&](std::span<const Var> c, std::span<const Var> x) {
    const Carry carry = jax_tree::unflatten(init, c);
    auto call = [&] {
      if constexpr (has_xs) return f(carry, jax_tree::unflatten(xs, x));
      else return f(carry);
    };
    auto [new_carry, y] = call();
    if (!y_like) {
      y_like = y;
      ys_paths = jax_tree::paths(y, "ys");
    }
    return FlatOut{jax_tree::leaves(new_carry), jax_tree::leaves(y)};
  };
  FlatResult r = jax_detail::scan(step, in, options);
  return std::pair<Carry, Y>{jax_tree::unflatten(init, r.carry), jax_tree::unflatten(*y_like, r.ys)};
}

}  // namespace jax_detail

// ---- scan -------------------------------------------------------------------------------
namespace jax {
using ScanOptions = JaxScanOptions;
using recur::NoXs;
using recur::no_xs;

template <class F, class Carry = std::vector<Var>, class Xs = std::vector<Var>>
  requires jax_detail::ScanTrees<Carry, Xs>
auto scan(F&& f, const Carry& init, const Xs& xs, const ScanOptions& options = {}) {
  return jax_detail::scan_trees("jax::scan", f, init, xs, options);
}
}  // namespace jax

// The short form.
template <class F, class Carry = std::vector<Var>, class Xs = std::vector<Var>>
  requires jax_detail::ScanTrees<Carry, Xs>
auto scan(F&& f, const Carry& init, const Xs& xs, const JaxScanOptions& options = {}) {
  return jax_detail::scan_trees("scan (jax)", f, init, xs, options);
}

}  // namespace recur
