// Weight gradients over many steps' rows (weight_grad_rows_detail.hpp).
#include <recur/ops/scan/weight_grad_rows_detail.hpp>

#include <cstring>
#include <string_view>

#include <recur/autodiff/record.hpp>
#include <recur/core/blas.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/ops/linalg.hpp>

namespace recur::scan_engine::detail {

void WeightGradRows::start(std::uint64_t pass, std::int64_t k, std::int64_t n, DType dtype) {
  if (pass == pass_ && h_rows_.defined()) return;
  pass_ = pass;  // a new backward pass: rows an earlier one left (it stopped half-way) are not its own
  filled_ = 0;
  h_rows_ = Tensor::empty({capacity_, k}, dtype);
  g_rows_ = Tensor::empty({capacity_, n}, dtype);
}

void WeightGradRows::add(std::uint64_t pass, const Tensor& h, const Tensor& g, Tensor& into) {
  dispatch_floating("scan_step_matmul", h.dtype(), [&]<class T>() {
    add(pass, h.data<T>(), g.data<T>(), h.size(0), h.size(1), g.size(1), into);
  });
}

template <class T>
void WeightGradRows::add(std::uint64_t pass, const T* h, const T* g, std::int64_t rows, std::int64_t k,
                         std::int64_t n, Tensor& into) {
  start(pass, k, n, dtype_of<T>());
  if (filled_ + rows > capacity_) flush(pass, into);
  if (rows > capacity_) {  // more rows than the buffer holds: this step's product on its own
    add_product(h, g, rows, k, n, into);
    return;
  }
  std::memcpy(h_rows_.data<T>() + filled_ * k, h, static_cast<std::size_t>(rows * k) * sizeof(T));
  std::memcpy(g_rows_.data<T>() + filled_ * n, g, static_cast<std::size_t>(rows * n) * sizeof(T));
  filled_ += rows;
}
template void WeightGradRows::add(std::uint64_t, const float*, const float*, std::int64_t, std::int64_t, std::int64_t,
                                  Tensor&);
template void WeightGradRows::add(std::uint64_t, const double*, const double*, std::int64_t, std::int64_t,
                                  std::int64_t, Tensor&);

void WeightGradRows::flush(std::uint64_t pass, Tensor& into) {
  if (pass != pass_ || filled_ == 0) return;
  dispatch_floating("scan_step_matmul", into.dtype(), [&]<class T>() {
    add_product(h_rows_.data<T>(), g_rows_.data<T>(), filled_, h_rows_.size(1), g_rows_.size(1), into);
  });
  filled_ = 0;
}

template <class T>
void WeightGradRows::add_product(const T* h, const T* g, std::int64_t rows, std::int64_t k, std::int64_t n,
                                 Tensor& into) const {
  if (k == 0 || n == 0) return;  // an empty weight: nothing to add (and BLAS refuses its strides)
  // dW += H^T G ([k, n]), or with W transposed dW += G^T H ([n, k]).
  if (transpose_w_)
    blas::gemm(true, false, n, k, rows, T(1), g, n, h, k, T(1), into.data<T>(), k);
  else
    blas::gemm(true, false, k, n, rows, T(1), h, k, g, n, T(1), into.data<T>(), n);
}

namespace {

// A loop's h W, and backward's g W^T, in float32 on the kernel the layers' per-step products
// use (core/repeated_gemm.hpp: libxsmm on the calling thread for small products, oneDNN for
// large ones; made once for the loop's shape and W), kept between the loop's steps. float64
// stays on matmul's OpenBLAS call, so that its values equal the recorded step's to the bit.
class StepProduct {
 public:
  explicit StepProduct(std::int64_t steps) { forward_.steps = backward_.steps = steps; }
  // h W, or an undefined Tensor where matmul has to take it (another dtype or shape).
  Tensor operator()(const Tensor& h, const Tensor& w) { return forward_.run(h, w, false); }
  // g W^T, or an undefined Tensor where matmul takes it.
  Tensor transposed(const Tensor& g, const Tensor& w) { return backward_.run(g, w, true); }
  // The kernels of both for a = [m, k] (k: W's rows), nullptr where matmul takes them.
  const blas::RepeatedGemm<float>* forward_kernel(std::int64_t m, const Tensor& w) {
    return forward_.prepare(m, w.size(0), w, false);
  }
  const blas::RepeatedGemm<float>* backward_kernel(std::int64_t m, const Tensor& w) {
    return backward_.prepare(m, w.size(1), w, true);
  }

 private:
  // One product a op(W) with W the same at every step, remade when W or the shape changes.
  struct Kernel {
    std::int64_t steps = 0;  // of the loop
    std::unique_ptr<blas::RepeatedGemm<float>> gemm;
    StoragePtr weight;  // W's buffer, held: no other buffer can take its address meanwhile
    const float* w_data = nullptr;
    std::int64_t m = -1, k = 0, n = 0;  // the shape decided for (m -1: none yet)
    bool pays = false;                  // whether laying W out pays at that shape

    // The kernel of a [rows, inner] op(W), nullptr where matmul has to take it.
    const blas::RepeatedGemm<float>* prepare(std::int64_t rows, std::int64_t inner, const Tensor& w,
                                             bool w_transposed) {
      if (w.dtype() != DType::float32 || w.rank() != 2 || inner != w.size(w_transposed ? 1 : 0)) return nullptr;
      const std::int64_t cols = w.size(w_transposed ? 0 : 1);
      if (rows != m || inner != k || cols != n) {  // decided once per shape, not at every step
        m = rows, k = inner, n = cols;
        // A loop of too few steps to pay for laying W out for the kernel runs its products on
        // matmul, as the recorded step does.
        pays = blas::RepeatedGemm<float>::worth_laying_out(rows, cols, inner, steps);
        gemm.reset();
      }
      if (!pays) return nullptr;
      if (!gemm || w.storage() != weight || w.data<float>() != w_data) {
        gemm = std::make_unique<blas::RepeatedGemm<float>>(rows, cols, inner, w.data<float>(), w.size(1),
                                                           w_transposed, inner, cols, 0.f, steps);
        weight = w.storage();
        w_data = w.data<float>();
      }
      return gemm.get();
    }
    Tensor run(const Tensor& a, const Tensor& w, bool w_transposed) {
      if (a.dtype() != DType::float32 || a.rank() != 2) return Tensor();
      const blas::RepeatedGemm<float>* kernel = prepare(a.size(0), a.size(1), w, w_transposed);
      if (!kernel) return Tensor();
      Tensor out = Tensor::empty({m, n}, DType::float32);
      if (m > 0 && n > 0) (*kernel)(a.data<float>(), out.data<float>());
      return out;
    }
  };
  Kernel forward_, backward_;
};

struct StepMatmul {
  static constexpr std::string_view name = "scan_step_matmul";
  bool transpose_w = false;
  std::shared_ptr<WeightGradRows> rows;
  std::shared_ptr<StepProduct> product;  // one per loop: its steps share the kernel
  OpAttributes attributes() const { return {{"transpose_w", transpose_w}}; }
  bool backward_reads(std::size_t which) const { return which != recur::detail::kBackwardOutput; }
  Tensor forward(const Tensor& h, const Tensor& w) const {
    if (!transpose_w && product)
      if (Tensor out = (*product)(h, w); out.defined()) return out;
    return matmul_t(h, w, false, transpose_w);
  }
  // dh = g W^T (W^T transposed back: g W); dW through the rows in plain backward, else
  // h^T g (g^T h when transposed), as matmul's rule.
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    const V &h = a.inputs[0], &w = a.inputs[1];
    Grads<V> out(2);
    if (a.needs_grad(0)) {
      if constexpr (std::is_same_v<V, Tensor>) {
        if (!transpose_w && product) out[0] = product->transposed(a.grad, w);
      }
      if (!out[0].defined()) out[0] = matmul_t(a.grad, w, false, !transpose_w);
    }
    if (a.needs_grad(1)) {
      if constexpr (std::is_same_v<V, Tensor>) {
        if (a.sink) {
          rows->add(a.sink->pass(), h, a.grad, a.sink->dense(1));
          return out;
        }
      }
      out[1] = transpose_w ? matmul_t(a.grad, h, true, false) : matmul_t(h, a.grad, true, false);
    }
    return out;
  }
};

struct WeightGradSum {
  static constexpr std::string_view name = "scan_weight_grad_sum";
  std::shared_ptr<WeightGradRows> rows;
  OpAttributes attributes() const { return {}; }
  Tensor forward(const Tensor& w) const { return w; }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    if constexpr (std::is_same_v<V, Tensor>) {
      if (a.sink) {
        Tensor g = a.grad.clone();
        rows->flush(a.sink->pass(), g);
        return {g};
      }
    }
    return {a.grad};
  }
};

}  // namespace

std::optional<StepProductKernels> step_product_kernels(const recur::detail::OpBox& op, std::int64_t m,
                                                       const Tensor& w) {
  const StepMatmul* mm = op.as<StepMatmul>();
  if (!mm) return std::nullopt;
  StepProductKernels k{nullptr, nullptr, mm->rows.get(), mm->transpose_w};
  if (!mm->transpose_w && mm->product && m > 0) {
    k.forward = mm->product->forward_kernel(m, w);
    k.backward = mm->product->backward_kernel(m, w);
  }
  return k;
}

recur::detail::OpBox step_matmul_op(bool transpose_w, std::shared_ptr<WeightGradRows> rows, std::int64_t steps) {
  return recur::detail::OpBox::make<2>(
      StepMatmul{transpose_w, std::move(rows), std::make_shared<StepProduct>(steps)});
}
Var weight_grad_sum(const Var& w, std::shared_ptr<WeightGradRows> rows) {
  return record(WeightGradSum{std::move(rows)}, w);
}

}  // namespace recur::scan_engine::detail
