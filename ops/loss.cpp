#include <recur/ops/loss.hpp>

#include <array>
#include <cmath>

#include <recur/core/creation.hpp>
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/reduce.hpp>
#include <recur/ops/shape.hpp>
#include <recur/ops/softmax.hpp>
#include <recur/ops/unary.hpp>

namespace recur {
namespace {

template <class V>
V reduce_loss(const V& per_element, Reduction r) {
  switch (r) {
    case Reduction::none: return per_element;
    case Reduction::sum: return sum(per_element);
    case Reduction::mean: break;
  }
  return mean(per_element);
}

// The elementwise losses compare two tensors of one floating dtype and one shape.
void check_pair(std::string_view op, const Tensor& a, const Tensor& b, std::string_view a_name,
                std::string_view b_name) {
  if (!is_floating(a.dtype()))
    fail<DTypeError>(op, "argument '", a_name, "' of shape ", to_string(a.shape()), " must be float32 or float64, got ",
                     a.dtype());
  check_same_dtype(op, a, b, a_name, b_name);
  if (a.shape() != b.shape())
    fail<ShapeError>(op, "argument '", a_name, "' of shape ", to_string(a.shape()), " and argument '", b_name,
                     "' of shape ", to_string(b.shape()), " must have the same shape");
}
// On Vars: also one tape, checked before anything is recorded.
void check_pair(std::string_view op, const Var& a, const Var& b, std::string_view a_name, std::string_view b_name) {
  const std::array<const Var*, 2> args{&a, &b};
  detail::common_tape(op, args);
  check_pair(op, a.value(), b.value(), a_name, b_name);
}

// mean or sum of (p - t)^2 as one op: the tape keeps only its inputs, not the difference
// and its square (a whole-sequence loss over [T, B, H] outputs would hold two more copies).
struct MseReduced {
  static constexpr std::string_view name = "mse";
  Reduction reduction;
  OpAttributes attributes() const { return {{"reduction", std::string(name_of(reduction))}}; }

  double scale(const Tensor& p) const {
    // The mean of nothing is NaN, as in NumPy and PyTorch.
    return reduction == Reduction::mean ? 1.0 / static_cast<double>(p.numel()) : 1.0;
  }

  // The sum of squared differences in double on the widest kernel table the CPU runs
  // (ops/kernels/loss_kernels_detail.hpp: eight partial sums in a fixed order, the same bits
  // in every table). Tensors are contiguous, and check_pair made the shapes equal.
  Tensor forward(const Tensor& p, const Tensor& t) const {
    return dispatch_floating(name, p.dtype(), [&]<class T>() {
      const double total = nn::detail::kernels<T>().squared_difference_sum(p.data<T>(), t.data<T>(), p.numel());
      return full({}, total * scale(p), p.dtype());
    });
  }

  // d/dp = 2 scale (p - t) grad, d/dt its negative.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const double k = 2.0 * scale(value_of(a.inputs[0]));
    if constexpr (std::is_same_v<V, Tensor>) {
      return dispatch_floating(name, a.grad.dtype(), [&]<class T>() -> Grads<Tensor> {
        const T g = static_cast<T>(k * a.grad.template item<double>());
        const Tensor& p = a.inputs[0];
        Tensor dp = Tensor::empty(p.shape(), p.dtype());
        nn::detail::kernels<T>().scaled_difference(g, p.data<T>(), a.inputs[1].template data<T>(), dp.data<T>(),
                                                   p.numel());
        if (!a.needs_grad(1)) return {dp, Tensor()};
        return {dp, unary_map<T>(dp, [](T v) { return -v; })};
      });
    } else {
      const V dp = sub(a.inputs[0], a.inputs[1]) * (a.grad * k);
      return {dp, neg(dp)};
    }
  }
};

template <class V>
V mse_of(const V& prediction, const V& target, Reduction r) {
  check_pair("mse", prediction, target, "prediction", "target");
  if (r != Reduction::none) return apply_op(MseReduced{r}, prediction, target);
  const V d = sub(prediction, target);
  return mul(d, d);
}

// softplus(x) - x t per element as one op, so that logits of any size, infinite ones too,
// give the limit rather than inf - inf: max(x, 0) - x t is x (1 - t) for x > 0 and -x t
// otherwise, and a term whose weight is 0 is 0. At x = +inf a target of 1 costs 0 and any
// smaller target inf; at x = -inf a target of 0 costs 0. The gradients are the limits
// too: sigmoid(x) - t for the logits (finite), -x for the targets.
struct BceWithLogits {
  static constexpr std::string_view name = "binary_cross_entropy_with_logits";

  // w x, and 0 when w is 0 even for an infinite x.
  template <class T>
  static T weighted(T x, T w) {
    return w == T(0) ? T(0) : x * w;
  }
  template <class T>
  static T loss(T x, T t) {
    return (x > 0 ? weighted(x, T(1) - t) : weighted(-x, t)) + std::log1p(std::exp(-std::abs(x)));
  }

  Tensor forward(const Tensor& x, const Tensor& t) const {
    return dispatch_floating(name, x.dtype(), [&]<class T>() { return binary_map<T>(name, x, t, loss<T>); });
  }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V& x = a.inputs[0];
    Grads<V> g(2);
    if (a.needs_grad(0)) g[0] = mul(a.grad, sub(sigmoid(x), a.inputs[1]));
    if (a.needs_grad(1)) g[1] = neg(mul(a.grad, x));
    return g;
  }
};

template <class V>
V bce_with_logits_of(const V& logits, const V& targets, Reduction r) {
  check_pair(BceWithLogits::name, logits, targets, "logits", "targets");
  return reduce_loss(apply_op(BceWithLogits{}, logits, targets), r);
}

// How labels address logits: logits are `outer` blocks of [classes, inner], label j (with
// j = o * inner + i) picks element (o, label, i). [C] logits are one block with inner 1.
struct ClassLayout {
  std::int64_t axis, classes, inner;
  explicit ClassLayout(const Shape& logits) : axis(logits.size() == 1 ? 0 : 1), classes(logits[axis]), inner(1) {
    for (std::size_t k = axis + 1; k < logits.size(); ++k) inner *= logits[k];
  }
  std::int64_t flat(std::int64_t j, std::int64_t label) const {
    return ((j / inner) * classes + label) * inner + j % inner;
  }
  // The logits' shape with the class axis dropped (what labels must be) or kept as 1.
  Shape without_classes(const Shape& logits) const {
    Shape s = logits;
    s.erase(s.begin() + axis);
    return s;
  }
  Shape with_one_class(const Shape& logits) const {
    Shape s = logits;
    s[axis] = 1;
    return s;
  }
};

// One op rather than log_softmax + pick + mean: the forward never materialises the
// [N, C] log-probabilities, and the backward is a single softmax.
struct CrossEntropy {
  static constexpr std::string_view name = "cross_entropy";
  Reduction reduction;
  OpAttributes attributes() const { return {{"reduction", std::string(name_of(reduction))}}; }

  static ClassLayout check(const Tensor& logits, const Tensor& labels) {
    if (!is_floating(logits.dtype()))
      fail<DTypeError>(name, "argument 'logits' of shape ", to_string(logits.shape()),
                       " must be float32 or float64, got ", logits.dtype());
    if (labels.dtype() != DType::int64)
      fail<DTypeError>(name, "argument 'labels' of shape ", to_string(labels.shape()),
                       " must hold int64 class indices, got ", labels.dtype(), " (logits of shape ",
                       to_string(logits.shape()), ")");
    if (logits.rank() == 0)
      fail<ShapeError>(name, "argument 'logits' of shape [] has no class axis; expected [C], [N, C] or [N, C, d...]");
    const ClassLayout l(logits.shape());
    const Shape expected = l.without_classes(logits.shape());
    if (labels.shape() != expected)
      fail<ShapeError>(name, "argument 'labels' of shape ", to_string(labels.shape()),
                       " does not fit argument 'logits' of shape ", to_string(logits.shape()),
                       ": expected labels of shape ", to_string(expected));
    const std::int64_t* y = labels.data<std::int64_t>();
    for (std::int64_t j = 0; j < labels.numel(); ++j)
      if (y[j] < 0 || y[j] >= l.classes)
        fail<IndexError>(name, "label ", y[j], " at position ", j, " is out of range [0, ", l.classes,
                         ") for argument 'logits' of shape ", to_string(logits.shape()), " (", l.classes, " classes)");
    return l;
  }

  Tensor forward(const Tensor& logits, const Tensor& labels) const {
    const ClassLayout l = check(logits, labels);
    // loss_j = logsumexp(logits of sample j) - logits[j, label_j], written over the fresh lse.
    Tensor loss = logsumexp(logits, {l.axis});
    return dispatch_floating(name, logits.dtype(), [&]<class T>() {
      T* z = loss.data<T>();
      const T* x = logits.data<T>();
      const std::int64_t* y = labels.data<std::int64_t>();
      const std::int64_t n = labels.numel();
      double total = 0;  // in double: float32 batches are summed without drift
      for (std::int64_t j = 0; j < n; ++j) {
        z[j] -= x[l.flat(j, y[j])];
        total += static_cast<double>(z[j]);
      }
      if (reduction == Reduction::none) return loss;
      if (reduction == Reduction::mean) total /= static_cast<double>(n);
      return scalar(total, logits.dtype());
    });
  }

  // g * (softmax(logits) - onehot(labels)), / count for mean; softmax is an op, so the
  // rule is differentiable again.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    Grads<V> g(2);
    if (!a.needs_grad(0)) return g;
    const V& logits = a.inputs[0];
    const Tensor& labels = value_of(a.inputs[1]);
    const ClassLayout l(logits.shape());
    Tensor onehot = zeros(logits.shape(), logits.dtype());
    dispatch_floating(name, logits.dtype(), [&]<class T>() {
      T* h = onehot.data<T>();
      const std::int64_t* y = labels.data<std::int64_t>();
      for (std::int64_t j = 0; j < labels.numel(); ++j) h[l.flat(j, y[j])] = T(1);
    });
    V scale = reduction == Reduction::none ? reshape(a.grad, l.with_one_class(logits.shape())) : a.grad;
    if (reduction == Reduction::mean) scale = scale * (1.0 / static_cast<double>(labels.numel()));
    g[0] = mul(scale, sub(softmax(logits, l.axis), lift(a.grad, onehot)));
    return g;
  }
};

}  // namespace

Tensor mse(const Tensor& prediction, const Tensor& target, Reduction r) { return mse_of(prediction, target, r); }
Var mse(const Var& prediction, const Var& target, Reduction r) { return mse_of(prediction, target, r); }

Tensor cross_entropy(const Tensor& logits, const Tensor& labels, Reduction r) {
  return CrossEntropy{r}.forward(logits, labels);
}
Var cross_entropy(const Var& logits, const Var& labels, Reduction r) { return record(CrossEntropy{r}, logits, labels); }
Var cross_entropy(const Var& logits, const Tensor& labels, Reduction r) {
  // Validate before the labels become a constant, so a failure leaves the tape as it was.
  const std::array<const Var*, 1> args{&logits};
  Tape& tape = detail::common_tape(CrossEntropy::name, args);
  CrossEntropy::check(logits.value(), labels);
  return record(CrossEntropy{r}, logits, tape.constant(labels));
}

Tensor binary_cross_entropy_with_logits(const Tensor& logits, const Tensor& targets, Reduction r) {
  return bce_with_logits_of(logits, targets, r);
}
Var binary_cross_entropy_with_logits(const Var& logits, const Var& targets, Reduction r) {
  return bce_with_logits_of(logits, targets, r);
}

}  // namespace recur
