// Every row of the gradient table (tests/grad_cases/) beyond finite differences:
//  - its Tensor and Var forms give the same bits, in float64 and float32;
//  - float32 (what users run) stays within float32 rounding of float64, values and
//    first-order gradients;
//  - a NaN input reaches every output that depends on it, and NaN or an infinity gives
//    the same bits in both forms;
//  - bad inputs (an extra axis, a float32/float64 mix) make both forms throw alike, the
//    same recur::Error subclass, and leave the tape as it was.
// Each failure names the row (the test's parameter) and the inputs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <recur/autodiff/tape_access.hpp>
#include <recur/ops/scan/step_program_detail.hpp>

#include "grad_table.hpp"
#include "row_runs.hpp"

namespace recur::testing {
namespace {

class GradTableForms : public ::testing::TestWithParam<std::size_t> {
 protected:
  const GradCase& row() const { return grad_table()[GetParam()]; }
  // Seeds from the row's name: adding a row does not change the others' draws.
  Rng rng_for(std::uint64_t trial) const { return row_rng(row(), trial); }
};

// ---- Tensor and Var forms ------------------------------------------------------------

TEST_P(GradTableForms, TensorAndVarFormsGiveTheSameBits) {
  const GradCase& c = row();
  if (!c.fn.has_tensor_form()) GTEST_SKIP() << c.name << " is a Var-only row";
  for (std::uint64_t trial = 0; trial < 3; ++trial) {
    Rng rng = rng_for(trial);
    const std::vector<Tensor> drawn = draw_inputs(c, rng);
    for (DType dtype : {DType::float64, DType::float32}) {
      const std::vector<Tensor> inputs = converted(drawn, dtype);
      const Outcome t = run_on_tensors(c, inputs), v = run_on_vars(c, inputs);
      ASSERT_FALSE(t.threw() || v.threw()) << c.name << " on " << describe(inputs) << ": Tensor form " << t.message
                                           << "; Var form " << v.message;
      EXPECT_TRUE(same_bits(t.output, v.output)) << c.name << " on " << describe(inputs) << ": Tensor form gives\n"
                                                 << t.output << "\nVar form gives\n" << v.output;
      EXPECT_EQ(t.output.dtype(), dtype) << c.name << " on " << describe(inputs);
    }
  }
}

// ---- float32 against float64 -----------------------------------------------------------

// Rounding float64 inputs to float32 and running the row in float32 must give float64's
// results up to float32 rounding. Each op rounds its result (relative error eps32 = 6e-8)
// and passes on its inputs' errors scaled by its condition number; rows chain a few
// well-conditioned ops over a few elements, so errors stay within some tens of eps32 of
// the magnitude (the worst row without a declared tolerance measured 6e-7, 10 eps32).
// The magnitude is the larger of the element and the largest element of the tensor: an
// output that is a difference of larger terms (a sum to near zero, a gradient that
// cancels) is only as accurate as those terms.
constexpr double default_float32_tolerance = 4e-6;

// The largest |a - ref| / (|ref_i| + max |ref|); 0 for equal tensors, +inf for a NaN
// where ref has none.
double scaled_error(const Tensor& a, const Tensor& ref) {
  const auto x = to_vector<double>(a), r = to_vector<double>(ref);
  double scale = 0, worst = 0;
  for (double v : r) scale = std::max(scale, std::abs(v));
  for (std::size_t i = 0; i < r.size(); ++i) {
    if (std::isnan(x[i]) != std::isnan(r[i])) return std::numeric_limits<double>::infinity();
    if (std::isnan(r[i]) || x[i] == r[i]) continue;
    worst = std::max(worst, std::abs(x[i] - r[i]) / (std::abs(r[i]) + scale));
  }
  return worst;
}

struct ValueAndGradients {
  Tensor output;
  std::vector<Tensor> grads;
};

// The row on Vars and plain backward of <output, weights>.
ValueAndGradients forward_backward(const GradCase& c, const std::vector<Tensor>& inputs, const Tensor& weights) {
  Tape tape;
  std::vector<Var> vars;
  for (const auto& x : inputs) vars.push_back(tape.variable(x));
  const Var out = c.fn.on_vars(vars);
  tape.backward(out, weights);
  ValueAndGradients r{out.value(), {}};
  for (const auto& v : vars) r.grads.push_back(v.grad());
  return r;
}

TEST_P(GradTableForms, Float32MatchesFloat64) {
  const GradCase& c = row();
  const double tol = c.float32_reason.empty() ? default_float32_tolerance : c.float32_tolerance;
  for (std::uint64_t trial = 0; trial < 3; ++trial) {
    Rng rng = rng_for(trial);
    const std::vector<Tensor> x32 = converted(draw_inputs(c, rng), DType::float32);
    const std::vector<Tensor> x64 = converted(x32, DType::float64);  // the same values
    Tensor w64 = [&] {  // output weights, exact in float32 too
      Tape probe;
      std::vector<Var> vars;
      for (const auto& x : x64) vars.push_back(probe.constant(x));
      return fill(c.fn.on_vars(vars).shape(), Domain::any, rng).to(DType::float32).to(DType::float64);
    }();
    const ValueAndGradients lo = forward_backward(c, x32, w64.to(DType::float32));
    const ValueAndGradients hi = forward_backward(c, x64, w64);
    const std::string where = c.name + " on " + describe(x32);
    ASSERT_EQ(lo.output.dtype(), DType::float32) << where << ": float32 inputs must give a float32 output";
    EXPECT_LE(scaled_error(lo.output, hi.output), tol) << where << ": output in float32\n"
                                                       << lo.output << "\nin float64\n" << hi.output;
    for (std::size_t k = 0; k < x32.size(); ++k) {
      ASSERT_EQ(lo.grads[k].dtype(), DType::float32) << where << ": gradient of input " << k;
      EXPECT_LE(scaled_error(lo.grads[k], hi.grads[k]), tol) << where << ": gradient of input " << k
                                                              << " in float32\n" << lo.grads[k] << "\nin float64\n"
                                                              << hi.grads[k];
    }
  }
}

// ---- values no rule reads --------------------------------------------------------------

// What each op says its plain backward reads (OpBox::backward_reads) holds: with the buffer
// of every node no rule reads dropped (as a captured loop drops them), backward gives the
// same bits. A rule that read a dropped value would throw (its data is gone).
TEST_P(GradTableForms, DroppingValuesNoRuleReadsChangesNoGradient) {
  const GradCase& c = row();
  for (std::uint64_t trial = 0; trial < 2; ++trial) {
    Rng rng = rng_for(trial);
    const std::vector<Tensor> inputs = draw_inputs(c, rng);
    const Tensor weights = [&] {
      Tape probe;
      std::vector<Var> vars;
      for (const auto& x : inputs) vars.push_back(probe.constant(x));
      return fill(c.fn.on_vars(vars).shape(), Domain::any, rng);
    }();
    const ValueAndGradients kept = forward_backward(c, inputs, weights);
    Tape tape;
    std::vector<Var> vars;
    for (const auto& x : inputs) vars.push_back(tape.variable(x));
    const Var out = c.fn.on_vars(vars);
    std::size_t dropped = 0;
    const std::vector<std::uint8_t> read = scan_engine::detail::read_by_backward(tape, 0, out.id());
    for (std::uint32_t id = 0; id < out.id(); ++id)
      if (!read[id] && TapeAccess::node_value(tape, id).defined()) {
        TapeAccess::drop_unread_value(tape, id);
        ++dropped;
      }
    tape.backward(out, weights);
    for (std::size_t k = 0; k < vars.size(); ++k)
      EXPECT_TRUE(same_bits(vars[k].grad(), kept.grads[k]))
          << c.name << " on " << describe(inputs) << ": gradient of input " << k << " with " << dropped
          << " values dropped\n" << vars[k].grad() << "\nkept:\n" << kept.grads[k];
  }
}

// ---- NaN and infinities ------------------------------------------------------------------

// The row's inputs with element `i` of input `k` set to `value`.
std::vector<Tensor> with_element(const std::vector<Tensor>& inputs, std::size_t k, std::int64_t i, double value) {
  Tensor changed = inputs[k].to(DType::float64).clone();
  changed.data<double>()[i] = value;
  std::vector<Tensor> out = inputs;
  out[k] = changed.to(inputs[k].dtype());
  return out;
}

// The run that defines the row's semantics: Var form (every row has one).
Tensor output_of(const GradCase& c, const std::vector<Tensor>& inputs) {
  const Outcome o = run_on_vars(c, inputs);
  if (o.threw()) throw std::runtime_error(c.name + " threw on " + describe(inputs) + ": " + o.message);
  return o.output.to(DType::float64);
}

// Which outputs depend on element i of input k: those that change when it moves (either
// way, by a quarter of its size plus a quarter, so relu and clip see both sides).
std::vector<bool> dependents(const GradCase& c, const std::vector<Tensor>& inputs, std::size_t k, std::int64_t i) {
  const double v = inputs[k].to(DType::float64).data<double>()[i];
  const auto base = to_vector<double>(output_of(c, inputs));
  std::vector<bool> dep(base.size(), false);
  for (double step : {0.25, -0.25}) {
    const auto moved = to_vector<double>(output_of(c, with_element(inputs, k, i, v + step * (1 + std::abs(v)))));
    for (std::size_t j = 0; j < base.size(); ++j)
      if (!(moved[j] == base[j] || (std::isnan(moved[j]) && std::isnan(base[j])))) dep[j] = true;
  }
  return dep;
}

// Element i of input k set to NaN, +inf and -inf in turn: both forms give the same bits
// and, unless the row is exempt, a NaN reaches every output that depends on the element.
void check_special_values(const GradCase& c, const std::vector<Tensor>& inputs, std::size_t k, std::int64_t i) {
  constexpr double inf = std::numeric_limits<double>::infinity();
  const std::vector<bool> dep = dependents(c, inputs, k, i);
  for (double special : {std::nan(""), inf, -inf}) {
    const std::vector<Tensor> poisoned = with_element(inputs, k, i, special);
    const std::string where = c.name + " on " + describe(inputs) + " with element " + std::to_string(i) +
                              " of input " + std::to_string(k) + " set to " + std::to_string(special);
    const Outcome v = run_on_vars(c, poisoned);
    EXPECT_FALSE(v.threw()) << where << ": Var form threw " << v.message;
    if (c.fn.has_tensor_form()) {
      const Outcome t = run_on_tensors(c, poisoned);
      EXPECT_EQ(t.error, v.error) << where << ": Tensor form threw '" << t.message << "', Var form '" << v.message
                                  << "'";
      if (t.threw() || v.threw()) continue;
      EXPECT_TRUE(same_bits(t.output, v.output)) << where << ": Tensor form gives\n"
                                                 << t.output << "\nVar form gives\n" << v.output;
    }
    if (v.threw() || !std::isnan(special) || !c.nan_exemption.empty()) continue;
    const auto out = to_vector<double>(v.output);
    for (std::size_t j = 0; j < out.size(); ++j)
      EXPECT_TRUE(!dep[j] || std::isnan(out[j]))
          << where << ": output element " << j << " depends on the NaN but is " << out[j];
  }
}

TEST_P(GradTableForms, NanAndInfinitiesPropagateAlikeInBothForms) {
  const GradCase& c = row();
  for (std::uint64_t trial = 0; trial < 2; ++trial) {
    Rng rng = rng_for(trial);
    const std::vector<Tensor> drawn = draw_inputs(c, rng);
    for (std::size_t k = 0; k < drawn.size(); ++k) {  // each input in turn, at a random element
      const std::int64_t i = std::uniform_int_distribution<std::int64_t>(0, drawn[k].numel() - 1)(rng);
      for (DType dtype : {DType::float64, DType::float32}) check_special_values(c, converted(drawn, dtype), k, i);
    }
  }
}

// ---- bad inputs --------------------------------------------------------------------------

// Inputs one of which is wrong: input k with an extra trailing axis of 5 (no drawn size
// is 5, so it meets no other input's axis), or in float32 among float64 inputs.
std::vector<std::pair<std::string, std::vector<Tensor>>> bad_variants(const std::vector<Tensor>& inputs) {
  std::vector<std::pair<std::string, std::vector<Tensor>>> out;
  for (std::size_t k = 0; k < inputs.size(); ++k) {
    Shape s = inputs[k].shape();
    s.push_back(5);
    std::vector<Tensor> longer = inputs;
    longer[k] = broadcast_to(unsqueeze(inputs[k], -1), s);
    out.emplace_back("input " + std::to_string(k) + " with an extra axis", std::move(longer));
    if (inputs.size() > 1) {
      std::vector<Tensor> mixed = inputs;
      mixed[k] = mixed[k].to(DType::float32);
      out.emplace_back("input " + std::to_string(k) + " in float32", std::move(mixed));
    }
  }
  return out;
}

TEST_P(GradTableForms, BadInputsThrowAlikeAndLeaveTheTape) {
  const GradCase& c = row();
  for (std::uint64_t trial = 0; trial < 2; ++trial) {
    Rng rng = rng_for(trial);
    const std::vector<Tensor> inputs = draw_inputs(c, rng);
    const std::uint32_t full_run = run_on_vars(c, inputs).nodes_recorded;
    for (const auto& [what, bad] : bad_variants(inputs)) {
      const std::string where = c.name + " with " + what + " (" + describe(bad) + ")";
      const Outcome v = run_on_vars(c, bad);
      EXPECT_TRUE(!v.threw() || v.recur_error) << where << ": Var form threw " << v.error << ", not a recur::Error: "
                                               << v.message;
      // No op mixes dtypes: somewhere the float32 input meets a float64 one.
      if (what.ends_with("in float32")) {
        EXPECT_EQ(v.error, "recur::DTypeError") << where << ": Var form " << (v.threw() ? v.message : "ran");
      }
      if (v.threw() && c.records_before_throwing.empty()) {
        EXPECT_EQ(v.nodes_recorded, 0u) << where << ": Var form threw and left nodes on the tape: " << v.message;
      } else if (v.threw()) {
        EXPECT_LT(v.nodes_recorded, full_run) << where << ": Var form threw and left more nodes than a prefix";
      }
      if (!c.fn.has_tensor_form()) continue;
      const Outcome t = run_on_tensors(c, bad);
      EXPECT_EQ(t.error, v.error) << where << ": Tensor form " << (t.threw() ? "threw " + t.message : "ran")
                                  << "; Var form " << (v.threw() ? "threw " + v.message : "ran");
      if (!t.threw() && !v.threw()) {
        EXPECT_TRUE(same_bits(t.output, v.output)) << where << ": both ran, with different results";
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(EveryRow, GradTableForms, ::testing::Range<std::size_t>(0, grad_table().size()),
                         [](const auto& info) { return test_name_of_row(info.param); });

// Every exemption says why.
TEST(GradTableMeta, ExemptionsGiveReasons) {
  for (const auto& c : grad_table()) {
    // A declared tolerance is looser than the default and says why.
    EXPECT_EQ(c.float32_reason.empty(), c.float32_tolerance == 0) << c.name;
    EXPECT_TRUE(c.float32_reason.empty() || c.float32_tolerance > default_float32_tolerance) << c.name;
    EXPECT_EQ(c.finite_difference_reason.empty(), c.finite_difference_atol == 0) << c.name;
    for (const std::string* reason :
         {&c.float32_reason, &c.nan_exemption, &c.records_before_throwing, &c.finite_difference_reason})
      EXPECT_TRUE(reason->empty() || reason->size() >= 20) << c.name << ": a reason, not '" << *reason << "'";
  }
}

}  // namespace
}  // namespace recur::testing
