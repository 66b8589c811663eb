// The LSTM step's elementwise part as one op. Plain backward recomputes the gate
// activations from the gates (kept on the tape anyway as the op's input) rather than
// storing them: the op stays a pure function of its inputs, so a scan checkpoint that
// releases and replays it needs nothing else, and the vectorized activations
// (ops/kernels/fast_math_detail.hpp) make the recomputation cheaper than keeping them would be in memory.
#include <algorithm>
#include <vector>

#include <recur/ops/arithmetic.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/join.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>
#include <recur/ops/nn/pointwise.hpp>
#include <recur/ops/nn/pointwise_detail.hpp>
#include <recur/ops/unary.hpp>

namespace recur::nn {
namespace {

struct LstmPointwise {
  static constexpr std::string_view name = "lstm_pointwise";

  Tensor forward(const Tensor& gates, const Tensor& c) const {
    detail::check_step_argument(name, gates, "gates", 4, c, "c");
    const std::int64_t batch = c.size(0), n = c.size(1);
    Tensor out = Tensor::empty({batch, 2 * n}, c.dtype());
    dispatch_floating(name, c.dtype(), [&]<class T>() {
      const T *pg = gates.data<T>(), *pc = c.data<T>();
      T* po = out.data<T>();  // each row [h', c']
      std::vector<T> scratch(static_cast<std::size_t>(5 * n));  // the activations [4n], tanh(c') [n]
      const auto forward_row = detail::kernels<T>().lstm.forward;
      for (std::int64_t b = 0; b < batch; ++b, pg += 4 * n, pc += n, po += 2 * n)
        forward_row(pg, scratch.data(), pc, po + n, po, scratch.data() + 4 * n, n);
    });
    return out;
  }

  // With c' = f c + i g and h' = o tanh(c'): dc' = dc'_out + dh' o (1 - tanh(c')^2), then
  // d(pre-activation) = d(activation) * activation'.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      return fused(a.grad, a.inputs[0], a.inputs[1], a.output);
    } else {
      const std::vector<V> g = split(a.inputs[0], 1, 4), out = split(a.output, 1, 2), d = split(a.grad, 1, 2);
      const V i = sigmoid(g[0]), f = sigmoid(g[1]), cell = tanh(g[2]), o = sigmoid(g[3]);
      const V tc = tanh(out[1]);
      const V dc = d[1] + d[0] * o * (1.0 - tc * tc);
      const V di = dc * cell * i * (1.0 - i), df = dc * a.inputs[1] * f * (1.0 - f);
      const V dg = dc * i * (1.0 - cell * cell), dout = d[0] * tc * o * (1.0 - o);
      return {concat({di, df, dg, dout}, 1), dc * f};
    }
  }

  static Grads<Tensor> fused(const Tensor& grad, const Tensor& gates, const Tensor& c, const Tensor& out) {
    const std::int64_t batch = c.size(0), n = c.size(1);
    Tensor dgates = Tensor::empty(gates.shape(), gates.dtype()), dc = Tensor::empty(c.shape(), c.dtype());
    dispatch_floating(name, c.dtype(), [&]<class T>() {
      const T *pg = gates.data<T>(), *pc = c.data<T>(), *po = out.data<T>(), *pd = grad.data<T>();
      T *dg = dgates.data<T>(), *dcp = dc.data<T>();
      std::vector<T> scratch(static_cast<std::size_t>(n));
      const auto& lstm = detail::kernels<T>().lstm;
      for (std::int64_t b = 0; b < batch; ++b, pg += 4 * n, pc += n, po += 2 * n, pd += 2 * n, dg += 4 * n, dcp += n) {
        // The kernel works in place: the activations become the gates' gradients, the
        // gradient reaching c' becomes the one reaching c.
        lstm.activations(pg, dg, n);
        std::copy(pd + n, pd + 2 * n, dcp);
        lstm.backward(dg, pc, po + n, pd, dcp, scratch.data(), n);
      }
    });
    return {dgates, dc};
  }
};

}  // namespace

Tensor lstm_pointwise(const Tensor& gates, const Tensor& c) { return LstmPointwise{}.forward(gates, c); }
Var lstm_pointwise(const Var& gates, const Var& c) { return record(LstmPointwise{}, gates, c); }

}  // namespace recur::nn
