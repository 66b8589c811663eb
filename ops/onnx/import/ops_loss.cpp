// NegativeLogLikelihoodLoss (what PyTorch's exporter and ONNX's SoftmaxCrossEntropyLoss
// expand to): -x[n, target[n, ...], ...] weighted per class, with ignore_index and the
// three reductions. Differentiable in the scores and the class weights.
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>

namespace recur::onnx_io::detail {
namespace {

std::vector<Var> nll_import(const NodeContext& c) {
  const Var& x = c.input(0);  // [N, C, d1, ...]
  const Var& target = c.input(1);  // [N, d1, ...]
  if (target.dtype() != DType::int64) c.invalid("target must be integers, got ", target.dtype());
  Shape want = x.shape();  // the target's shape: x's without the class axis
  if (x.rank() >= 2) want.erase(want.begin() + 1);
  if (x.rank() < 2 || target.shape() != want)
    c.invalid("input must be [N, C, d1, ...] and target [N, d1, ...]: got input ", to_string(x.shape()), " and target ",
              to_string(target.shape()));
  if (c.has_input(2) && c.input(2).shape() != Shape{x.size(1)})
    c.invalid("weight must hold one value per class, [", x.size(1), "], got ", to_string(c.input(2).shape()));
  const std::string reduction = c.string_attr("reduction", "mean");
  if (reduction != "mean" && reduction != "sum" && reduction != "none") c.invalid("reduction '", reduction, "'");
  // Ignored targets pick class 0 with weight 0.
  Tensor classes = target.value().clone();
  Tensor kept = Tensor::empty(classes.shape(), x.dtype());
  const auto* ignore = c.attribute("ignore_index");
  dispatch_floating("NegativeLogLikelihoodLoss", x.dtype(), [&]<class T>() {
    std::int64_t* t = classes.data<std::int64_t>();
    T* k = kept.data<T>();
    for (std::int64_t i = 0; i < classes.numel(); ++i) {
      const bool ignored = ignore && t[i] == ignore->i();
      if (!ignored && (t[i] < 0 || t[i] >= x.size(1))) c.invalid("target ", t[i], " is not a class of ", x.size(1));
      k[i] = ignored ? T(0) : T(1);
      if (ignored) t[i] = 0;
    }
  });
  const Var picked = squeeze(gather(x, 1, unsqueeze(classes, 1)), 1);
  Var weight = constant(kept);
  if (c.has_input(2)) weight = mul(take(c.input(2), classes), weight);
  const Var loss = neg(mul(picked, weight));
  if (reduction == "none") return {loss};
  if (reduction == "sum") return {sum(loss)};
  return {div(sum(loss), sum(weight))};
}

}  // namespace

void add_loss_ops(Registry& r) { r.add("NegativeLogLikelihoodLoss", {nll_import, 12}); }

}  // namespace recur::onnx_io::detail
