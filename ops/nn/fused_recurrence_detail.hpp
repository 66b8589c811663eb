#pragma once
// Internal to the fused layer op: what its two backward halves share. Backward runs as
// cuDNN's does, in two parts: the time loop turns the gate activations into the gate
// gradients and yields the initial states' gradients (fused_recurrence.cpp, BackwardData),
// then the gradients of the input and the weights follow from the gate gradients alone, a
// gemm or a sum each over all steps (fused_backward_weights.cpp, BackwardWeights).
#include <cstdint>

#include <recur/core/tensor.hpp>

namespace recur::nn::detail {

// The sizes of one fused direction and the steps its backward reaches. Loop step s runs
// time step time_of(s); truncate_gradient = k keeps the last k loop steps [lo, steps),
// whose time steps are [first(), first() + count()).
struct FusedGeometry {
  std::int64_t steps = 0, batch = 0, width = 0, n = 0, gh = 0;  // T, B, I, H, G*H
  std::int64_t p = 0;  // the size of h: H, or a projected LSTM's P
  bool reverse = false;
  std::int64_t lo = 0;
  std::int64_t time_of(std::int64_t s) const { return reverse ? steps - 1 - s : s; }
  std::int64_t count() const { return steps - lo; }
  std::int64_t first() const { return reverse ? 0 : lo; }
};

struct WeightGradients {
  Tensor x, w_ih, w_hh, b_ih, b_hh;
};
struct WantedWeightGradients {
  bool x = false, w_ih = false, w_hh = false, b_ih = false, b_hh = false;
};

// The gradients of the pre-activations [T, B, G*H] (rows outside the window unread).
// RNN and LSTM add both projections, so one buffer serves both; a GRU's differ.
template <class T>
struct GateGradients {
  T* input = nullptr;      // of x W_ih^T + b_ih
  T* recurrent = nullptr;  // of h W_hh^T + b_hh (PyTorch's GRU: its candidate part is r dn)
  // ONNX's GRU: r_t h_prev(t) [T, B, H], what W_hn multiplies (its gradient, the rows of
  // W_hh after the first 2H, is the sum of dn_t^T r_t h_prev(t)); null otherwise.
  T* reset_h = nullptr;
};

// BackwardWeights: dx = d.input W_ih, dW_ih = d.input^T x, dW_hh = sum of
// d.recurrent_t^T h_prev(t), b_ih's = the sum of d.input over steps and batch, b_hh's that
// of d.recurrent. h: the output's rows h_t [T, B, P]; h0 [B, P] (P = H without a
// projection). Gradients not wanted stay undefined; outside the window they are zero.
template <class T>
WeightGradients backward_weights(const FusedGeometry& geo, const GateGradients<T>& d, const Tensor& x,
                                 const Tensor& w_ih, const T* h, const T* h0, WantedWeightGradients wanted);

}  // namespace recur::nn::detail
