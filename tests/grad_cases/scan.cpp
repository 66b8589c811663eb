// Gradient-check rows: the faces of scan besides scan itself (which the recurrent rows
// run): Theano's map, reduce, foldl and foldr, and ONNX's Scan. Each steps over a
// sequence x [T, n] with a state or second operand s [n]. Then the associative scan and
// the linear recurrence, over odd and even lengths.
#include "grad_table.hpp"

namespace recur::testing {
namespace {

std::vector<Shape> sequence_and_state(Rng& rng) {
  std::uniform_int_distribution<std::int64_t> steps(1, 3), width(1, 4);
  const std::int64_t n = width(rng);
  return {{steps(rng), n}, {n}};
}

// a and b broadcasting to a random shape whose `axis` is time, and h0 broadcasting to one
// step of it: linear_recurrence's arguments.
std::function<std::vector<Shape>(Rng&)> recurrence_shapes(std::int64_t axis) {
  return [=](Rng& rng) {
    std::vector<Shape> out = broadcast_pair(1, 3)(rng);
    Shape step = broadcast_shapes("recurrence_shapes", out[0], out[1]);
    step.erase(step.begin() + (axis < 0 ? static_cast<std::int64_t>(step.size()) + axis : axis));
    out.push_back(broadcastable_to(rng, step));
    return out;
  };
}

// One or two sequences [T, n] with T from 2 to 7, odd and even: the associative scan's
// elems. (T = 1 never calls fn, so a bad input would reach no op; the tests cover it.)
std::vector<Shape> sequences(Rng& rng, std::size_t count) {
  std::uniform_int_distribution<std::int64_t> steps(2, 7), width(1, 3);
  return std::vector<Shape>(count, Shape{steps(rng), width(rng)});
}
std::vector<Shape> one_sequence(Rng& rng) { return sequences(rng, 1); }
std::vector<Shape> two_sequences(Rng& rng) { return sequences(rng, 2); }

// (a, b) of two steps h -> a h + b composed: first (a1, b1), then (a2, b2).
std::pair<Var, Var> compose(const std::pair<Var, Var>& first, const std::pair<Var, Var>& second) {
  return {first.first * second.first, second.first * first.second + second.second};
}

// The step the folds share: a new state from (x_t, state).
StepResult fold_step(S a) { return a[1] * tanh(a[0]) + a[0]; }

}  // namespace

std::vector<GradCase> scan_face_cases() {
  return {
      {"map", sequence_and_state,
       [](S x) { return map([](S a) -> StepResult { return tanh(a[0] * a[1]); }, {x[0]}, {x[1]})[0]; }},
      {"foldl", sequence_and_state, [](S x) { return foldl(fold_step, {x[0]}, {x[1]})[0]; }},
      {"foldr", sequence_and_state, [](S x) { return foldr(fold_step, {x[0]}, {x[1]})[0]; }},
      {"reduce", sequence_and_state, [](S x) { return reduce(fold_step, {x[0]}, {x[1]}, {}, true)[0]; }},
      // The new state and a scan output per step, both returned.
      {"onnx_scan", sequence_and_state,
       [](S x) {
         const auto r = onnx_scan([](S a) { return std::vector<Var>{tanh(a[0] * a[1] + a[1]), a[0] * a[1]}; },
                                  {x[1]}, {x[0]});
         return concat({unsqueeze(r.final_states[0], 0), r.scan_outputs[0]}, 0);
       }},
      {"associative_scan_add", one_sequence,
       [](S x) { return associative_scan([](const Var& p, const Var& q) { return p + q; }, x[0]); }},
      // The linear recurrence's pairs along the last axis, from the end; both leaves returned.
      {"associative_scan_linear_pairs_reverse", two_sequences, [](S x) {
         const auto [a, b] = associative_scan(compose, std::pair{x[0], x[1]}, {.reverse = true, .axis = -1});
         return concat({a, b}, 0);
       }},
      // The flat form on a list of leaves.
      {"associative_scan_leaves", two_sequences, [](S x) {
         const auto r = associative_scan(
             [](std::span<const Var> p, std::span<const Var> q) {
               return std::vector<Var>{p[0] * q[0], q[0] * p[1] + q[1]};
             },
             x, {.axis = 0});
         return concat({r[0], r[1]}, 1);
       }},
      // A non-commutative fn (the pairs) whose result feeds a nonlinearity.
      GradCase{"associative_scan_linear_pairs", two_sequences,
               [](S x) {
                 const auto r = associative_scan(compose, std::pair{x[0], tanh(x[1])});
                 return r.second * r.second;
               }}
          .partial_on_throw(earlier_ops_stay_recorded),
      {"linear_recurrence", recurrence_shapes(0), [](auto x) { return linear_recurrence(x[0], x[1], x[2]); }},
      {"linear_recurrence_reverse_last_axis", recurrence_shapes(-1),
       [](auto x) { return linear_recurrence(x[0], x[1], x[2], {.axis = -1, .reverse = true}); }},
      // Squared: the backward reads the op's output, which second order must see depend on
      // the inputs.
      {"linear_recurrence_squared", recurrence_shapes(0), [](auto x) {
         const auto h = linear_recurrence(x[0], x[1], x[2]);
         return h * h;
       }},
  };
}

}  // namespace recur::testing
