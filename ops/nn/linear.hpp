#pragma once
// Linear and Embedding layers with PyTorch's parameter names, shapes and initialization
// (torch.nn.Linear, torch.nn.Embedding).
#include <cstdint>

#include <recur/autodiff/module.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/random.hpp>

namespace recur::nn {

// y = x W^T + b for x [..., in_features]: weight [out, in] and bias [out], both drawn from
// U(-1/sqrt(in), 1/sqrt(in)) (PyTorch's kaiming_uniform with a = sqrt(5), and its bias rule).
class Linear : public Module {
 public:
  Linear(std::int64_t in_features, std::int64_t out_features, Generator& gen, bool bias = true,
         DType dtype = DType::float32);
  // ShapeError naming 'input' unless its last axis is in_features (rank >= 1).
  Var operator()(const Var& input) const;
  const Shared& weight() const { return weight_; }
  const Shared& bias() const { return bias_; }  // null without bias

 private:
  std::int64_t in_ = 0, out_ = 0;
  Shared weight_, bias_;
};

// Rows of weight [num_embeddings, embedding_dim], drawn from N(0, 1), looked up by int64
// indices of any shape: the result has shape indices.shape + [embedding_dim].
class Embedding : public Module {
 public:
  Embedding(std::int64_t num_embeddings, std::int64_t embedding_dim, Generator& gen, DType dtype = DType::float32);
  // DTypeError unless the indices are int64; IndexError for one outside [-num, num).
  Var operator()(const Tensor& indices) const;
  Var operator()(const Var& indices) const;
  const Shared& weight() const { return weight_; }

 private:
  Shared weight_;
};

}  // namespace recur::nn
