#pragma once
// Internal to captured scan steps (step_rewrite.cpp): the gradient of a product h_t W of a
// value that changes every step and a weight that does not, taken over many steps at once.
// Backward of the product at step t needs dW += h_t^T g_t: T products of B rows each, which
// a small B makes slow (Appleyard et al. 2016 do the same for cuDNN). Here each step's
// rows are appended to a buffer, and one product over all of them (a few hundred rows at
// a time) is added into W's gradient: the step's op (scan_step_matmul) appends, and a node
// recorded before the loop (scan_weight_grad_sum, the identity on W, whose backward runs
// after every step's) adds the rows still pending. Only plain backward defers; under
// create_graph the step's op takes its gradient as matmul does.
#include <cstdint>
#include <memory>
#include <optional>

#include <recur/autodiff/op_box.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/core/tensor.hpp>

namespace recur::scan_engine::detail {

class WeightGradRows {
 public:
  // Rows of h [*, k] and g [*, n] are kept up to `capacity` at a time. transpose_w: the
  // product is h W^T (W is [n, k]).
  WeightGradRows(std::int64_t capacity, bool transpose_w) : capacity_(capacity), transpose_w_(transpose_w) {}
  // One step's h and g, in backward pass `pass`; `into` is W's gradient so far.
  void add(std::uint64_t pass, const Tensor& h, const Tensor& g, Tensor& into);
  // The same from h's [rows, k] and g's [rows, n] elements (T: into's dtype).
  template <class T>
  void add(std::uint64_t pass, const T* h, const T* g, std::int64_t rows, std::int64_t k, std::int64_t n,
           Tensor& into);
  // Adds the pending rows of pass `pass` into `into`.
  void flush(std::uint64_t pass, Tensor& into);

 private:
  void start(std::uint64_t pass, std::int64_t k, std::int64_t n, DType dtype);
  template <class T>
  void add_product(const T* h, const T* g, std::int64_t rows, std::int64_t k, std::int64_t n, Tensor& into) const;
  std::int64_t capacity_;
  bool transpose_w_;
  std::uint64_t pass_ = 0;
  Tensor h_rows_, g_rows_;
  std::int64_t filled_ = 0;
};

// A captured step's product as a loop runs it on buffers of its own (planned_loop.cpp): its
// kernels for h [m, k] W and g W^T with W `w`, kept by the op for the loop (nullptr where
// matmul takes the product: not float32, W transposed), and where its weight gradient goes.
struct StepProductKernels {
  const blas::RepeatedGemm<float>* forward = nullptr;
  const blas::RepeatedGemm<float>* backward = nullptr;
  WeightGradRows* rows = nullptr;
  bool transpose_w = false;
};
// Those of `op` when it is step_matmul_op's, else nullopt.
std::optional<StepProductKernels> step_product_kernels(const recur::detail::OpBox& op, std::int64_t m,
                                                       const Tensor& w);

// The op of h W (transpose_w: h W^T) at one step of a captured step's program of `steps`
// steps, its weight gradient through `rows`.
recur::detail::OpBox step_matmul_op(bool transpose_w, std::shared_ptr<WeightGradRows> rows, std::int64_t steps);
// W itself; its backward adds the rows `rows` still holds into W's gradient.
Var weight_grad_sum(const Var& w, std::shared_ptr<WeightGradRows> rows);

}  // namespace recur::scan_engine::detail
