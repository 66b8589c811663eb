#include <recur/ops/linalg.hpp>

#include <recur/core/blas.hpp>
#include <recur/ops/broadcast.hpp>
#include <recur/ops/define.hpp>
#include <recur/ops/shape.hpp>

namespace recur {
namespace {

struct MatMulT {
  static constexpr std::string_view name = "matmul";
  bool ta = false, tb = false;  // transposes of a's and b's last two axes
  OpAttributes attributes() const { return {{"transpose_a", ta}, {"transpose_b", tb}}; }
  bool backward_reads(std::size_t which) const { return which != detail::kBackwardOutput; }  // dA, dB need A, B

  Tensor forward(const Tensor& a, const Tensor& b) const {
    check_same_dtype(name, a, b);
    if (a.rank() < 2 || a.rank() > 3 || b.rank() < 2 || b.rank() > 3)
      fail<ShapeError>(name, "arguments must be 2-D or 3-D, got 'a' of shape ", to_string(a.shape()),
                       " and 'b' of shape ", to_string(b.shape()));
    const std::int64_t ba = a.rank() == 3 ? a.size(0) : 1, bb = b.rank() == 3 ? b.size(0) : 1;
    const std::int64_t m = ta ? a.size(-1) : a.size(-2), k = ta ? a.size(-2) : a.size(-1);
    const std::int64_t kb = tb ? b.size(-1) : b.size(-2), n = tb ? b.size(-2) : b.size(-1);
    if (k != kb || (ba != bb && ba != 1 && bb != 1))
      fail<ShapeError>(name, "argument 'a' of shape ", to_string(a.shape()), (ta ? " (transposed)" : ""),
                       " does not fit argument 'b' of shape ", to_string(b.shape()), (tb ? " (transposed)" : ""));
    const std::int64_t batch = std::max(ba, bb);
    Shape out_shape = a.rank() == 3 || b.rank() == 3 ? Shape{batch, m, n} : Shape{m, n};
    Tensor out = Tensor::empty(out_shape, a.dtype());
    dispatch_floating(name, a.dtype(), [&]<class T>() {
      T* c = out.data<T>();
      if (k == 0) {
        std::fill_n(c, out.numel(), T(0));
        return;
      }
      if (m == 0 || n == 0) return;
      const T* pa = a.data<T>();
      const T* pb = b.data<T>();
      const std::int64_t lda = a.size(-1), ldb = b.size(-1);
      const std::int64_t sa = ba == 1 ? 0 : a.size(-1) * a.size(-2), sb = bb == 1 ? 0 : b.size(-1) * b.size(-2);
      for (std::int64_t i = 0; i < batch; ++i)
        blas::gemm(ta, tb, m, n, k, T(1), pa + i * sa, lda, pb + i * sb, ldb, T(0), c + i * m * n, n);
    });
    return out;
  }

  // With C = op(A) op(B): dA = G op(B)^T (transposed back if A was), dB = op(A)^T G (likewise).
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& args) const {
    const V& a = args.inputs[0];
    const V& b = args.inputs[1];
    const V& g = args.grad;
    Grads<V> out(2);
    if (args.needs_grad(0)) {
      V da = ta ? matmul_t(b, g, tb, true) : matmul_t(g, b, false, !tb);
      out[0] = sum_to(da, a.shape());  // a broadcast over the batch sums its gradients
    }
    if (args.needs_grad(1)) {
      V db = tb ? matmul_t(g, a, true, ta) : matmul_t(a, g, !ta, false);
      out[1] = sum_to(db, b.shape());
    }
    return out;
  }
};

// matmul on 1-D..3-D operands in terms of matmul_t on 2-D/3-D ones, for Tensor or Var.
template <class V>
V matmul_any(const V& a, const V& b) {
  if (a.rank() == 0 || b.rank() == 0)
    fail<ShapeError>("matmul", "arguments must have rank 1 to 3, got 'a' of shape ", to_string(a.shape()),
                     " and 'b' of shape ", to_string(b.shape()));
  if (a.rank() == 1) {  // row vector: [K] -> [1,K], drop that axis afterwards
    V r = matmul_any(unsqueeze(a, 0), b);
    return squeeze(r, r.rank() - 2);
  }
  if (b.rank() == 1) {  // column vector: [K] -> [K,1]
    V r = matmul_any(a, unsqueeze(b, 1));
    return squeeze(r, -1);
  }
  if (a.rank() == 3 && b.rank() == 2) {  // one big gemm over the batch
    V r = matmul_t(reshape(a, {a.size(0) * a.size(1), a.size(2)}), b, false, false);
    return reshape(r, {a.size(0), a.size(1), b.size(1)});
  }
  return matmul_t(a, b, false, false);
}

}  // namespace

Tensor matmul_t(const Tensor& a, const Tensor& b, bool ta, bool tb) { return MatMulT{ta, tb}.forward(a, b); }
Var matmul_t(const Var& a, const Var& b, bool ta, bool tb) { return record(MatMulT{ta, tb}, a, b); }
Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_any(a, b); }
Var matmul(const Var& a, const Var& b) {
  return transactional(a, [&] { return matmul_any(a, b); });
}

}  // namespace recur
