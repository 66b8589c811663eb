#pragma once
// The gradient-check table: one row per op (or op variant). Each row draws random input
// shapes (broadcasting and size-1 axes included) and fills inputs from its domain. The
// table-driven tests run every row: finite differences first and second order in float64
// (test_gradients.cpp), the Tensor and Var forms against each other, float32 against
// float64, NaN and infinities, bad inputs (test_grad_table_forms.cpp), and that every op
// in ops/ has a row (test_grad_table_coverage.cpp).
//
// A row's function is written once. A generic lambda, [](auto x) { return add(x[0], x[1]); },
// runs on both forms: x is a std::span<const Tensor> (values only) or a std::span<const Var>
// (recorded), so its body must compile for both. A lambda taking std::span<const Var> only,
// [](S x) {...}, makes a Var-only row: for what has no Tensor form (scan, cells, the fused
// layer op).
#include <functional>
#include <random>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include <recur/recur.hpp>

namespace recur::testing {

using Rng = std::mt19937_64;
// The argument of a Var-only row.
using S = std::span<const Var>;

enum class Domain {
  any,             // N(0, 1)
  positive,        // U(0.5, 2)
  away_from_zero,  // |x| in U(0.3, 2), random sign (kinks of abs, relu, ... avoided)
  distinct,        // N(0,1) values at least 0.05 apart (max/min ties avoided)
};

// A row's function on Vars and, when it was written generically, on Tensors.
struct RowFunction {
  std::function<Var(std::span<const Var>)> on_vars;
  std::function<Tensor(std::span<const Tensor>)> on_tensors;  // empty: a Var-only row

  template <class F>
    requires std::is_invocable_r_v<Var, const F&, std::span<const Var>>
  RowFunction(F f) : on_vars(f) {  // NOLINT: rows are written as {name, shapes, lambda}
    if constexpr (std::is_invocable_v<const F&, std::span<const Tensor>>) {
      // A generic row must stay values-only on Tensors: a Var-only op would turn them into
      // constants on a tape and make the row silently Var-only.
      static_assert(std::is_same_v<std::invoke_result_t<const F&, std::span<const Tensor>>, Tensor>,
                    "a generic row must return a Tensor when given Tensors");
      on_tensors = std::move(f);
    }
  }
  bool has_tensor_form() const { return static_cast<bool>(on_tensors); }
};

struct GradCase {
  std::string name;
  std::function<std::vector<Shape>(Rng&)> shapes;
  RowFunction fn;
  Domain domain = Domain::any;
  bool second_order = true;

  // ---- what the row covers and where it is exempt; set with the modifiers below ------
  // The ops (functions of ops/ returning Vars) the row covers besides the one its name
  // starts with (the longest op name that is the row name or a prefix of it followed by
  // '_': "log_softmax_last" covers log_softmax).
  std::vector<std::string> also_covers{};
  // float32 against float64: allowed error relative to the magnitude (see the test).
  // Empty reason: the default tolerance.
  double float32_tolerance = 0;
  std::string float32_reason{};
  // Why a NaN input need not reach every output that depends on it (empty: it must).
  std::string nan_exemption{};
  // Why a failing Var form may leave nodes on the tape: the ops before the one that
  // rejects the bad input succeed and stay recorded (empty: the tape must be unchanged).
  std::string records_before_throwing{};
  // The finite-difference check's absolute tolerance (0: check_gradients' default) and why
  // the row needs a looser one.
  double finite_difference_atol = 0;
  std::string finite_difference_reason{};

  GradCase covers(std::vector<std::string> ops) && {
    also_covers = std::move(ops);
    return std::move(*this);
  }
  GradCase float32_within(double tolerance, std::string reason) && {
    float32_tolerance = tolerance;
    float32_reason = std::move(reason);
    return std::move(*this);
  }
  GradCase nan_exempt(std::string reason) && {
    nan_exemption = std::move(reason);
    return std::move(*this);
  }
  GradCase finite_differences_within(double atol, std::string reason) && {
    finite_difference_atol = atol;
    finite_difference_reason = std::move(reason);
    return std::move(*this);
  }
  GradCase partial_on_throw(std::string reason) && {
    records_before_throwing = std::move(reason);
    return std::move(*this);
  }
};

// The usual reason for partial_on_throw: a row of several ops whose bad input reaches
// only a later op.
inline const std::string earlier_ops_stay_recorded =
    "the ops before the one that meets the bad input succeed and stay recorded";

// Why tanh's gradient is looser in float32: tanh' = 1 - y^2 cancels where |x| is large
// (y rounds to within eps32 of 1), so its relative error is eps32 / (1 - y^2), as in
// PyTorch; rows summing several products reach |x| ~ 5 to 10.
inline const std::string tanh_derivative_cancels =
    "tanh' = 1 - y^2 cancels for large pre-activations: relative error eps32 / (1 - y^2)";

// The random draws of a row's trial: seeded by the row's name, so that adding or moving a
// row changes no other row's inputs.
Rng row_rng(const GradCase& c, std::uint64_t trial);

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

// ---- inputs ------------------------------------------------------------------------

// A float64 tensor of `shape` with values from `d`.
Tensor fill(const Shape& shape, Domain d, Rng& rng);
// One draw of a row's inputs: its shapes (which also draw the row's own arguments), then
// the values.
std::vector<Tensor> draw_inputs(const GradCase& c, Rng& rng);

// The table: rows from every family file in tests/grad_cases/.
const std::vector<GradCase>& grad_table();
// The ops a row covers: the op its name starts with (among `ops`), and also_covers.
std::vector<std::string> covered_ops(const GradCase& c, const std::vector<std::string>& ops);

std::vector<GradCase> elementwise_cases();
std::vector<GradCase> linalg_cases();
std::vector<GradCase> shape_cases();
std::vector<GradCase> reduction_cases();
std::vector<GradCase> indexing_cases();
std::vector<GradCase> loss_cases();
std::vector<GradCase> recurrent_cases();
std::vector<GradCase> scan_face_cases();

}  // namespace recur::testing
