// cast between float32 and float64: values as Tensor::to gives them, the gradient cast
// back to the input's dtype (exactly, against the hand-computed one), finite differences
// with a step a float32 rounding cannot swamp, second order, errors.
#include <gtest/gtest.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::values;

TEST(Cast, ValuesAndTheGradientCastBack) {
  Generator gen(3);
  const Tensor x64 = normal({2, 3}, 0.0, 1.0, gen, DType::float64);
  const Tensor w32 = normal({2, 3}, 0.0, 1.0, gen, DType::float32);
  Tape tape;
  const Var x = tape.variable(x64);
  const Var y = cast(x, DType::float32);
  EXPECT_EQ(y.dtype(), DType::float32);
  EXPECT_TRUE(testing::same_bytes(y.value(), x64.to(DType::float32)));
  EXPECT_TRUE(testing::same_bytes(cast(x64, DType::float32), x64.to(DType::float32)));
  tape.backward(sum(y * tape.constant(w32)));
  EXPECT_EQ(x.grad().dtype(), DType::float64);
  EXPECT_EQ(values(x.grad()), values(w32.to(DType::float64)));  // d sum(w y)/dx = w, in x's dtype
  // float32 -> float64 likewise, and a cast to x's own dtype is x.
  const Var x32 = tape.variable(w32);
  tape.backward(sum(cast(x32, DType::float64) * tape.constant(x64)));
  EXPECT_EQ(x32.grad().dtype(), DType::float32);
  EXPECT_EQ(values(x32.grad()), values(x64.to(DType::float32)));
  EXPECT_EQ(cast(x, DType::float64).id(), x.id());
}

// f(x) = float64(tanh(float32(x)) * float32(x)): central differences with step 1e-3 see the
// float32 rounding (~1e-7) only as ~1e-4 of the derivative.
TEST(Cast, GradientsMatchFiniteDifferencesThroughFloat32) {
  Generator gen(4);
  const Tensor x = normal({3, 2}, 0.0, 1.0, gen, DType::float64);
  const auto f = [](std::span<const Var> v) {
    const Var h = cast(v[0], DType::float32);
    return cast(tanh(h) * h, DType::float64);
  };
  const auto report = check_gradients(f, {x}, {.eps = 1e-3, .rtol = 1e-3, .atol = 1e-4, .second_order = true});
  EXPECT_TRUE(report.ok) << report.failure;
}

TEST(Cast, IntegersAreRefused) {
  Tape tape;
  const Var i = tape.constant(full({2}, 1.0, DType::int64));
  testing::expect_clean_failure<DTypeError>(tape, [&] { cast(i, DType::float64); }, {"cast", "int64", "float64"});
  const Var x = tape.variable(full({2}, 1.0, DType::float64));
  testing::expect_clean_failure<DTypeError>(tape, [&] { cast(x, DType::int64); }, {"cast", "float64", "int64"});
}

}  // namespace
}  // namespace recur
