#include <recur/ops/nn/init.hpp>

#include <cmath>
#include <tuple>

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xview.hpp>

#include <recur/core/creation.hpp>
#include <recur/core/xtensor_interop.hpp>

namespace recur::nn::init {
namespace {

double fan_of(const Shape& shape, FanMode mode) {
  const Fans f = fans(shape);
  return static_cast<double>(mode == FanMode::fan_in ? f.fan_in : f.fan_out);
}

// Bounds of a uniform draw with standard deviation `std`.
double uniform_bound(double std) { return std::sqrt(3.0) * std; }

}  // namespace

Fans fans(const Shape& shape) {
  if (shape.size() < 2)
    fail<ValueError>("init::fans", "fan_in and fan_out need a shape of rank >= 2, got ", to_string(shape));
  std::int64_t receptive = 1;
  for (std::size_t d = 2; d < shape.size(); ++d) receptive *= shape[d];
  return {shape[1] * receptive, shape[0] * receptive};
}

double calculate_gain(Gain nonlinearity, double param) {
  switch (nonlinearity) {
    case Gain::linear:
    case Gain::sigmoid: return 1.0;
    case Gain::tanh: return 5.0 / 3.0;
    case Gain::relu: return std::sqrt(2.0);
    case Gain::leaky_relu: return std::sqrt(2.0 / (1.0 + param * param));
    case Gain::selu: return 0.75;
  }
  return 1.0;
}

Tensor uniform(const Shape& shape, Generator& gen, double a, double b, DType dtype) {
  return recur::uniform(shape, a, b, gen, dtype);
}

Tensor normal(const Shape& shape, Generator& gen, double mean, double std, DType dtype) {
  return recur::normal(shape, mean, std, gen, dtype);
}

Tensor zeros(const Shape& shape, DType dtype) { return recur::zeros(shape, dtype); }

Tensor xavier_uniform(const Shape& shape, Generator& gen, double gain, DType dtype) {
  const Fans f = fans(shape);
  const double bound = gain * std::sqrt(6.0 / static_cast<double>(f.fan_in + f.fan_out));
  return recur::uniform(shape, -bound, bound, gen, dtype);
}

Tensor xavier_normal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  const Fans f = fans(shape);
  return recur::normal(shape, 0.0, gain * std::sqrt(2.0 / static_cast<double>(f.fan_in + f.fan_out)), gen, dtype);
}

Tensor kaiming_uniform(const Shape& shape, Generator& gen, double a, FanMode mode, Gain nonlinearity, DType dtype) {
  const double bound = uniform_bound(calculate_gain(nonlinearity, a) / std::sqrt(fan_of(shape, mode)));
  return recur::uniform(shape, -bound, bound, gen, dtype);
}

Tensor kaiming_normal(const Shape& shape, Generator& gen, double a, FanMode mode, Gain nonlinearity, DType dtype) {
  return recur::normal(shape, 0.0, calculate_gain(nonlinearity, a) / std::sqrt(fan_of(shape, mode)), gen, dtype);
}

Tensor orthogonal(const Shape& shape, Generator& gen, double gain, DType dtype) {
  if (shape.size() < 2)
    fail<ValueError>("init::orthogonal", "needs a shape of rank >= 2, got ", to_string(shape));
  if (!is_floating(dtype)) fail<DTypeError>("init::orthogonal", "expects float32 or float64, got ", dtype);
  const std::int64_t rows = shape[0], cols = rows == 0 ? 0 : numel(shape) / rows;
  if (rows == 0 || cols == 0) return recur::zeros(shape, dtype);
  // QR wants a tall matrix: factor the transpose of a wide one and transpose Q back.
  const bool wide = rows < cols;
  xt::xarray<double> a = to_xarray<double>(recur::normal({rows, cols}, 0.0, 1.0, gen, DType::float64));
  if (wide) a = xt::transpose(a);
  auto [q, r] = xt::linalg::qr(a, xt::linalg::qrmode::reduced);
  // Q R = A stays true when column j of Q and row j of R change sign together; making
  // diag(R) positive picks the one factorization that makes Q Haar-distributed.
  xt::xarray<double> out = q;
  for (std::size_t j = 0; j < out.shape()[1]; ++j) {
    const double sign = r(j, j) > 0 ? gain : (r(j, j) < 0 ? -gain : 0.0);
    xt::view(out, xt::all(), j) *= sign;
  }
  if (wide) {
    xt::xarray<double> back = xt::transpose(out);  // into a new array: assigning to out would alias
    return from_xarray(std::move(back)).view(shape).to(dtype);
  }
  return from_xarray(std::move(out)).view(shape).to(dtype);
}

}  // namespace recur::nn::init
