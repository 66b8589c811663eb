#pragma once
// Internal to the fused recurrent ops: the arithmetic of each cell's elementwise part, once,
// as plain loops over one batch row of H units. Every fast path calls these: the per-step
// ops of pointwise.hpp (forward and plain backward) and the fused layer op of
// fused_recurrence.hpp (forward, the replay of the cell states, backward). The
// differentiable form of the same arithmetic, for create_graph, is built from ops in the
// per-step ops' backward. Gate order and equations are PyTorch's (pointwise.hpp).
//
// Each row function is a few branch-free loops that the compiler vectorizes; the
// activations are the row kernels of ops/kernels/fast_math_detail.hpp. Callers reach them through
// cell_kernel_choice_detail.hpp: they are compiled for the portable baseline and for AVX2
// (cell_kernel_table_detail.hpp; the inline namespace below keeps the two copies apart).
#include <cstdint>

#include <recur/ops/kernels/fast_math_detail.hpp>
#include <recur/ops/kernels/nonlinearity.hpp>

namespace recur::nn::detail {
inline namespace RECUR_KERNEL_ISA {

using recur::detail::sigmoid_row;
using recur::detail::tanh_row;

// LSTM, gates i, f, g, o: act [4n] = [sigmoid(i), sigmoid(f), tanh(g), sigmoid(o)],
// c' = f c + i g, h' = o tanh(c').
template <class T>
struct LstmKernel {
  // act = the activations of the pre-activations pre [4n]; act may be pre.
  static void activations(const T* pre, T* act, std::int64_t n) {
    sigmoid_row<T>(pre, nullptr, act, 2 * n);
    tanh_row(pre + 2 * n, act + 2 * n, n);
    sigmoid_row<T>(pre + 3 * n, nullptr, act + 3 * n, n);
  }

  // c = f c_prev + i g. Forward and the fused op's replay of the cell states both run this,
  // so the replayed states are bit-identical to the forward ones.
  static void cell_update(const T* act, const T* c_prev, T* c, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) c[j] = act[n + j] * c_prev[j] + act[j] * act[2 * n + j];
  }

  // One step: pre [4n] -> act [4n] (act may be pre), c and h from c_prev. tanh_c [n]: the
  // scratch that receives tanh(c).
  static void forward(const T* pre, T* act, const T* c_prev, T* c, T* h, T* tanh_c, std::int64_t n) {
    activations(pre, act, n);
    cell_update(act, c_prev, c, n);
    tanh_row(c, tanh_c, n);
    for (std::int64_t j = 0; j < n; ++j) h[j] = act[3 * n + j] * tanh_c[j];
  }

  // Backward of one step, in place. act [4n]: in, the step's activations; out, the gradients
  // of its pre-activations. c_prev, c: the cell state before and after the step. dh: the
  // whole gradient reaching h'. dc: in, the gradient reaching c' from later steps; out, the
  // one reaching c_prev. tanh_c [n]: scratch. With dc' = dc + dh o (1 - tanh(c')^2), each
  // pre-activation's gradient is its activation's times the activation's derivative.
  static void backward(T* act, const T* c_prev, const T* c, const T* dh, T* dc, T* tanh_c, std::int64_t n) {
    tanh_row(c, tanh_c, n);
    for (std::int64_t j = 0; j < n; ++j) {
      const T i = act[j], f = act[n + j], g = act[2 * n + j], o = act[3 * n + j], tc = tanh_c[j];
      const T d = dc[j] + dh[j] * o * (T(1) - tc * tc);
      act[j] = d * g * i * (T(1) - i);
      act[n + j] = d * c_prev[j] * f * (T(1) - f);
      act[2 * n + j] = d * i * (T(1) - g * g);
      act[3 * n + j] = dh[j] * tc * o * (T(1) - o);
      dc[j] = d * f;
    }
  }
};

// Elman RNN: h' = act(pre), where pre is the sum of both projections. The derivative is
// read off h' (tanh' = 1 - h'^2; relu's is h' > 0).
template <class T>
struct RnnKernel {
  // pre [count] -> h' in place.
  static void forward(T* pre, std::int64_t count, Nonlinearity act) {
    if (act == Nonlinearity::tanh) {
      tanh_row(pre, pre, count);
    } else {
      for (std::int64_t j = 0; j < count; ++j) pre[j] = pre[j] <= 0 ? T(0) : pre[j];  // NaN stays NaN, as torch.relu
    }
  }
  // dpre = dh act'(h) for h = h' [count]; dpre may be dh.
  static void backward(const T* h, const T* dh, T* dpre, std::int64_t count, Nonlinearity act) {
    if (act == Nonlinearity::tanh) {
      for (std::int64_t j = 0; j < count; ++j) dpre[j] = dh[j] * (T(1) - h[j] * h[j]);
    } else {
      for (std::int64_t j = 0; j < count; ++j) dpre[j] = h[j] > 0 ? dh[j] : T(0);
    }
  }
};

// GRU, gates r, z, n, from x = x W_ih^T + b_ih and hp = h W_hh^T + b_hh, both [3n]:
//   r = sigmoid(x_r + hp_r), z = sigmoid(x_z + hp_z), h' = (1 - z) cand + z h
//   (computed as cand + z (h - cand)), with the candidate in either form:
//   PyTorch's (linear_before_reset = 1):  cand = tanh(x_n + r hp_n);
//   ONNX's default (linear_before_reset = 0): cand = tanh(x_n + hp_n) where hp_n is
//   (r h) W_hn^T + b_hn, a product the caller makes between reset_update and candidate.
// act [3n] = [r, z, cand]; every function may work in place on x's row (act == x).
template <class T>
struct GruKernel {
  static void reset_update(const T* x, const T* hp, T* act, std::int64_t n) { sigmoid_row(x, hp, act, 2 * n); }

  // cand from x_n and hp_n; scaled: PyTorch's form (hp_n times r).
  static void candidate(const T* x, const T* hp_n, T* act, bool scaled, std::int64_t n) {
    const T* r = act;
    T* cand = act + 2 * n;
    if (scaled) {
      for (std::int64_t j = 0; j < n; ++j) cand[j] = x[2 * n + j] + r[j] * hp_n[j];
    } else {
      for (std::int64_t j = 0; j < n; ++j) cand[j] = x[2 * n + j] + hp_n[j];
    }
    tanh_row(cand, cand, n);
  }

  // PyTorch's form: act [3n] = [r, z, cand].
  static void activations(const T* x, const T* hp, T* act, std::int64_t n) {
    reset_update(x, hp, act, n);
    candidate(x, hp + 2 * n, act, true, n);
  }

  // h' [n] from h [n] and the activations.
  static void blend(const T* act, const T* h, T* h_next, std::int64_t n) {
    const T *z = act + n, *cand = act + 2 * n;
    for (std::int64_t j = 0; j < n; ++j) h_next[j] = cand[j] + z[j] * (h[j] - cand[j]);
  }

  // One step in PyTorch's form: h' [n] from h [n]; act [3n]: the activations (may be x).
  static void forward(const T* x, const T* hp, const T* h, T* h_next, T* act, std::int64_t n) {
    activations(x, hp, act, n);
    blend(act, h, h_next, n);
  }

  // Backward through h' = cand + z (h - cand) and the candidate's tanh, in place from dh'
  // [n]: act [r, z, cand] -> [r, dz, dn] (dz, dn: the gradients of the update gate's and
  // the candidate's pre-activations), dh = dh' z (h's direct share).
  static void backward_blend(T* act, const T* h, const T* dh_next, T* dh, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) {
      const T g = dh_next[j], z = act[n + j], cand = act[2 * n + j];
      act[2 * n + j] = g * (T(1) - z) * (T(1) - cand * cand);
      act[n + j] = g * (h[j] - cand) * z * (T(1) - z);
      dh[j] = g * z;
    }
  }

  // Then the reset gate, PyTorch's form: act [r, dz, dn] -> [dr, dz, dn], and hp_n's
  // gradient dhp_n = dn r [n].
  static void backward_reset_scaled(T* act, const T* hp_n, T* dhp_n, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) {
      const T r = act[j], dn = act[2 * n + j];
      dhp_n[j] = dn * r;
      act[j] = dn * hp_n[j] * r * (T(1) - r);
    }
  }

  // ONNX's form, given d_rh = dn W_hn [n], the gradient reaching r h: act [r, dz, dn] ->
  // [dr, dz, dn], and dh [n] += d_rh r.
  static void backward_reset_inner(T* act, const T* d_rh, const T* h, T* dh, std::int64_t n) {
    for (std::int64_t j = 0; j < n; ++j) {
      const T r = act[j];
      dh[j] += d_rh[j] * r;
      act[j] = d_rh[j] * h[j] * r * (T(1) - r);
    }
  }

  // Backward of one step in PyTorch's form from dh' [n]: dx and dhp [3n], the gradients of
  // both projections (they differ only in the candidate's part, hp_n being scaled by r),
  // and dh [n] through h' = ... + z h. The activations are recomputed into dx.
  static void backward(const T* x, const T* hp, const T* h, const T* dh_next, T* dx, T* dhp, T* dh, std::int64_t n) {
    activations(x, hp, dx, n);
    backward_blend(dx, h, dh_next, dh, n);
    backward_reset_scaled(dx, hp + 2 * n, dhp + 2 * n, n);
    for (std::int64_t j = 0; j < 2 * n; ++j) dhp[j] = dx[j];
  }
};

}  // namespace RECUR_KERNEL_ISA
}  // namespace recur::nn::detail
