#pragma once
// Parameter initializers with PyTorch's conventions (torch.nn.init), drawing from a
// recur::Generator so that a seed fixes the result. Each returns a new float32 or float64
// Tensor of `shape`. Fans follow PyTorch: for a shape [out, in, k...], fan_in = in * prod(k)
// and fan_out = out * prod(k); shapes of rank < 2 have no fans (ValueError).
#include <cstdint>

#include <recur/core/random.hpp>
#include <recur/core/tensor.hpp>

namespace recur::nn::init {

enum class FanMode { fan_in, fan_out };
// The nonlinearities of torch.nn.init.calculate_gain.
enum class Gain { linear, sigmoid, tanh, relu, leaky_relu, selu };

struct Fans {
  std::int64_t fan_in = 0, fan_out = 0;
};
Fans fans(const Shape& shape);

// The recommended gain for `nonlinearity`; `param` is leaky_relu's negative slope.
double calculate_gain(Gain nonlinearity, double param = 0.01);

// U(a, b) and N(mean, std^2): core/random's draws.
Tensor uniform(const Shape& shape, Generator& gen, double a = 0.0, double b = 1.0, DType dtype = DType::float32);
Tensor normal(const Shape& shape, Generator& gen, double mean = 0.0, double std = 1.0,
              DType dtype = DType::float32);
Tensor zeros(const Shape& shape, DType dtype = DType::float32);

// Glorot: U(-s, s) with s = gain * sqrt(6 / (fan_in + fan_out)), or N(0, std^2) with
// std = gain * sqrt(2 / (fan_in + fan_out)).
Tensor xavier_uniform(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = DType::float32);
Tensor xavier_normal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = DType::float32);

// He: std = calculate_gain(nonlinearity, a) / sqrt(fan) with fan chosen by `mode`;
// U(-sqrt(3) std, sqrt(3) std) or N(0, std^2). a is leaky_relu's negative slope.
// (torch.nn.Linear's weight is kaiming_uniform with a = sqrt(5): U(+-1/sqrt(fan_in)).)
Tensor kaiming_uniform(const Shape& shape, Generator& gen, double a = 0.0, FanMode mode = FanMode::fan_in,
                       Gain nonlinearity = Gain::leaky_relu, DType dtype = DType::float32);
Tensor kaiming_normal(const Shape& shape, Generator& gen, double a = 0.0, FanMode mode = FanMode::fan_in,
                      Gain nonlinearity = Gain::leaky_relu, DType dtype = DType::float32);

// A (semi-)orthogonal matrix times `gain`: the tensor seen as [shape[0], rest] has
// orthonormal rows or columns (whichever are fewer). As torch.nn.init.orthogonal_: the Q of
// the QR decomposition of a N(0, 1) matrix (transposed when it is wide), with each column
// of Q multiplied by the sign of R's diagonal so that the result is uniformly distributed.
Tensor orthogonal(const Shape& shape, Generator& gen, double gain = 1.0, DType dtype = DType::float32);

}  // namespace recur::nn::init
