#include <recur/ops/nn/linear.hpp>

#include <cmath>

#include <recur/autodiff/record.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/linalg.hpp>
#include <recur/ops/nn/init.hpp>
#include <recur/ops/shape.hpp>

namespace recur::nn {

Linear::Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen, bool bias, DType dtype)
    : in_(in_features), out_(out_features) {
  if (in_features < 1 || out_features < 1)
    fail<ValueError>("Linear", "in_features (", in_features, ") and out_features (", out_features,
                     ") must be at least 1");
  weight_ = register_parameter(
      "weight", init::kaiming_uniform({out_features, in_features}, gen, std::sqrt(5.0), init::FanMode::fan_in,
                                      init::Gain::leaky_relu, dtype));
  if (bias) {
    const double bound = 1.0 / std::sqrt(static_cast<double>(in_features));
    bias_ = register_parameter("bias", init::uniform({out_features}, gen, -bound, bound, dtype));
  }
}

Var Linear::operator()(const Var& input) const {
  if (!input.defined()) fail<ValueError>("Linear", "argument 'input' is an undefined Var");
  if (input.rank() < 1 || input.size(-1) != in_)
    fail<ShapeError>("Linear", "argument 'input' of shape ", to_string(input.shape()), " must end in in_features = ",
                     in_, " (weight of shape ", to_string(weight_.shape()), ")");
  if (input.dtype() != weight_.dtype())
    fail<DTypeError>("Linear", "argument 'input' of shape ", to_string(input.shape()), " is ", input.dtype(),
                     " but the weight is ", weight_.dtype());
  Tape& tape = input.tape();
  return transactional(tape, [&] {
    // Any leading axes become rows of one matrix product.
    Shape rows = input.shape();
    rows.back() = out_;
    const Var flat = input.rank() == 2 ? input : reshape(input, {-1, in_});
    Var y = matmul_t(flat, tape.read(weight_), false, true);
    if (bias_.defined()) y = y + tape.read(bias_);
    return input.rank() == 2 ? y : reshape(y, rows);
  });
}

Embedding::Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& gen, DType dtype) {
  if (num_embeddings < 1 || embedding_dim < 1)
    fail<ValueError>("Embedding", "num_embeddings (", num_embeddings, ") and embedding_dim (", embedding_dim,
                     ") must be at least 1");
  weight_ = register_parameter("weight", init::normal({num_embeddings, embedding_dim}, gen, 0.0, 1.0, dtype));
}

Var Embedding::operator()(const Tensor& indices) const {
  if (indices.defined() && indices.dtype() != DType::int64)
    fail<DTypeError>("Embedding", "argument 'indices' of shape ", to_string(indices.shape()), " must be int64, got ",
                     indices.dtype());
  Tape& tape = Tape::current();
  return transactional(tape, [&] { return take(tape.read(weight_), indices, 0); });
}

Var Embedding::operator()(const Var& indices) const {
  if (indices.defined() && indices.dtype() != DType::int64)
    fail<DTypeError>("Embedding", "argument 'indices' of shape ", to_string(indices.shape()), " must be int64, got ",
                     indices.dtype());
  Tape& tape = indices.tape();
  return transactional(tape, [&] { return take(tape.read(weight_), indices, 0); });
}

}  // namespace recur::nn
