#pragma once
// Loss functions. Each takes a Reduction: `mean` (the default) and `sum` give a 0-d
// result, `none` the per-element (cross_entropy: per-sample) losses.
#include <string_view>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

enum class Reduction { none, mean, sum };
constexpr std::string_view name_of(Reduction r) {
  return r == Reduction::none ? "none" : r == Reduction::mean ? "mean" : "sum";
}

// (prediction - target)^2; the shapes must match exactly (no broadcasting).
Tensor mse(const Tensor& prediction, const Tensor& target, Reduction reduction = Reduction::mean);
Var mse(const Var& prediction, const Var& target, Reduction reduction = Reduction::mean);

// -log_softmax(logits)[label] per sample, PyTorch's layouts: logits [N, C] with labels [N],
// [C] with a 0-d label, or [N, C, d...] with labels [N, d...] (classes on axis 1). Labels
// are int64 in [0, C). `mean` divides by the number of labels.
Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Reduction reduction = Reduction::mean);
Var cross_entropy(const Var& logits, const Var& labels, Reduction reduction = Reduction::mean);
// Labels as a constant on the tape of `logits`.
Var cross_entropy(const Var& logits, const Tensor& labels, Reduction reduction = Reduction::mean);

// max(x, 0) - x * t + log1p(exp(-|x|)) = softplus(x) - x * t: the binary cross-entropy of
// sigmoid(x) against targets t, without overflow for logits of any size. Infinite logits
// give the limits: 0 for a target that agrees (t = 1 at +inf, t = 0 at -inf), inf for any
// other; the logits' gradient sigmoid(x) - t stays finite. Shapes must match.
Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets,
                                        Reduction reduction = Reduction::mean);
Var binary_cross_entropy_with_logits(const Var& logits, const Var& targets, Reduction reduction = Reduction::mean);

}  // namespace recur
