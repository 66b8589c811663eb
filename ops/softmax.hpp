#pragma once
// The softmax family, computed stably (shifted by the maximum, so logits of any magnitude
// neither overflow nor lose the small terms): logsumexp, softmax, log_softmax.
#include <cstdint>

#include <recur/autodiff/var.hpp>
#include <recur/core/tensor.hpp>

namespace recur {

// log(sum(exp(x))) over `axes` (empty: all axes); keepdims keeps them with size 1.
Tensor logsumexp(const Tensor& x, const Axes& axes = {}, bool keepdims = false);
Var logsumexp(const Var& x, const Axes& axes = {}, bool keepdims = false);
// exp(x) / sum(exp(x)) along `axis` (x must have rank >= 1).
Tensor softmax(const Tensor& x, std::int64_t axis = -1);
Var softmax(const Var& x, std::int64_t axis = -1);
// x - logsumexp(x) along `axis`: log(softmax(x)) without underflow to -inf.
Tensor log_softmax(const Tensor& x, std::int64_t axis = -1);
Var log_softmax(const Var& x, std::int64_t axis = -1);

}  // namespace recur
