// Gradient-check rows: the faces of scan besides scan itself (which the recurrent rows
// run): Theano's map, reduce, foldl and foldr, and ONNX's Scan. Each steps over a
// sequence x [T, n] with a state or second operand s [n].
#include "grad_table.hpp"

namespace recur::testing {
namespace {

std::vector<Shape> sequence_and_state(Rng& rng) {
  std::uniform_int_distribution<std::int64_t> steps(1, 3), width(1, 4);
  const std::int64_t n = width(rng);
  return {{steps(rng), n}, {n}};
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
  };
}

}  // namespace recur::testing
