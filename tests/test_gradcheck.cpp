// The gradient checker itself: it passes correct rules and catches wrong ones, at first
// and at second order. A user-defined op shows how ops are written outside the library.
#include <gtest/gtest.h>

#include <recur/autodiff/record.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

// square(x) = x^2 with a backward rule that is right at first order only when `wrong_first`
// is false, and differentiable correctly only when `wrong_second` is false.
struct Square {
  static constexpr std::string_view name = "square";
  bool wrong_first = false, wrong_second = false;
  Tensor forward(const Tensor& x) const { return mul(x, x); }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V& x = a.inputs[0];
    if (wrong_first) return {mul(a.grad, x)};  // missing factor 2
    if (wrong_second) return {mul(a.grad, lift(x, mul(value_of(x), scalar_like(value_of(x), 2.0))))};  // constant
    return {mul(a.grad, mul(x, scalar_like(x, 2.0)))};
  }
};

std::vector<Tensor> inputs() { return {tensor({0.5, -1.5, 2.0}, DType::float64)}; }

TEST(GradCheck, AcceptsACorrectRule) {
  const auto r = check_gradients([](std::span<const Var> x) { return record(Square{}, x[0]); }, inputs());
  EXPECT_TRUE(r.ok) << r.failure;
  EXPECT_LT(r.max_error_first, 1e-7);
  EXPECT_LT(r.max_error_second, 1e-6);
}

TEST(GradCheck, CatchesAWrongFirstDerivative) {
  const auto r = check_gradients([](std::span<const Var> x) { return record(Square{true, false}, x[0]); }, inputs(),
                                 {.second_order = false});
  EXPECT_FALSE(r.ok);
  EXPECT_NE(r.failure.find("first"), std::string::npos) << r.failure;
}

TEST(GradCheck, CatchesABackwardThatIsNotDifferentiable) {
  const auto first_only = check_gradients(
      [](std::span<const Var> x) { return record(Square{false, true}, x[0]); }, inputs(), {.second_order = false});
  EXPECT_TRUE(first_only.ok) << first_only.failure;
  const auto both = check_gradients([](std::span<const Var> x) { return record(Square{false, true}, x[0]); }, inputs());
  EXPECT_FALSE(both.ok);
  EXPECT_NE(both.failure.find("second"), std::string::npos) << both.failure;
}

TEST(GradCheck, RejectsFloat32Inputs) {
  EXPECT_THROW(check_gradients([](std::span<const Var> x) { return x[0]; }, {ones({2})}), DTypeError);
}

}  // namespace
}  // namespace recur
