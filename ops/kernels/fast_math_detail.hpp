#pragma once
// Internal: exp, sigmoid and tanh over rows, for the fused recurrent ops and the sigmoid and
// tanh ops, in loops without branches or calls that the compiler vectorizes (glibc's tanhf
// goes through expm1f one element at a time and took a fifth of an LSTM step). Accuracy is within 3 ulp in float
// and double alike (tests/test_nn_fast_math.cpp):
//   exp: 2^n e^r with n = round(x / ln 2), r = x - n ln 2 split in two parts so n ln 2 is
//        exact, e^r by its Taylor series (|r| <= ln2 / 2; 7 terms for float, 13 for double);
//   expm1: the Taylor series of e^y - 1 for |y| < 1/2 (no cancellation), exp(y) - 1 beyond;
//   tanh(x) = sign(x) m / (m + 2) with m = expm1(2|x|);  sigmoid(x) = 1 / (1 + exp(-x)).
// exp's argument is clamped to about [-87, 88] (float) or [-708, 709] (double), where
// sigmoid and tanh are already 0, +-1 or 1; NaN stays NaN.
#include <cstdint>

#include <recur/ops/kernels/kernel_isa_detail.hpp>

// GCC keeps a loop with floating-point selects scalar while it assumes that a comparison
// may trap (-ftrapping-math, its default): recur never enables floating-point traps, so
// these functions are compiled without that assumption. (Clang ignores this.)
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC push_options
#pragma GCC optimize("no-trapping-math")
#endif

namespace recur::detail {
inline namespace RECUR_KERNEL_ISA {

template <class T>
struct MathTraits;
template <>
struct MathTraits<float> {
  using Int = std::int32_t;
  static constexpr float exp_lo = -87.0f, exp_hi = 88.0f, tanh_hi = 9.0f;
  static constexpr float round_shift = 12582912.0f;  // 1.5 * 2^23
  static constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440054690583e-4f;
  static constexpr int exp_terms = 7, expm1_terms = 10, mantissa = 23, bias = 127;
};
template <>
struct MathTraits<double> {
  using Int = std::int64_t;
  static constexpr double exp_lo = -708.0, exp_hi = 709.0, tanh_hi = 19.5;
  static constexpr double round_shift = 6755399441055744.0;  // 1.5 * 2^52
  static constexpr double ln2_hi = 6.93147180369123816490e-01, ln2_lo = 1.90821492927058770002e-10;
  static constexpr int exp_terms = 13, expm1_terms = 17, mantissa = 52, bias = 1023;
};

// 1 + y/(First+1) (1 + y/(First+2) (... (1 + y/Last))): with First = 0 the Taylor series of
// e^y, with First = 1 that of (e^y - 1) / y. Reciprocals, not divisions, so it stays cheap.
template <class T, int First, int Last>
[[gnu::always_inline]] inline T taylor_tail(T y) {
  // Unrolled at compile time: a loop here would keep the callers' loops from vectorizing.
  if constexpr (First >= Last) {
    return T(1);
  } else {
    return T(1) + y * (T(1) / T(First + 1)) * taylor_tail<T, First + 1, Last>(y);
  }
}

// Row kernels. Each runs in passes over chunks of a row, every pass a loop without
// branches or calls that the compiler vectorizes (plain ternaries: std::min and friends
// are compiled with other options and would not be inlined here).
inline constexpr std::int64_t kChunk = 64;

// v[j] = exp(v[j]) for j < n <= kChunk.
template <class T>
void exp_chunk(T* v, std::int64_t n) {
  using M = MathTraits<T>;
  T k[kChunk];
  for (std::int64_t j = 0; j < n; ++j) {
    const T lo = M::exp_lo, hi = M::exp_hi, x = v[j];
    const T kept = x < lo ? lo : (x > hi ? hi : x);  // NaN stays NaN (both tests fail)...
    const T low = x > lo ? x : lo;                   // ...but becomes lo on its way to n
    k[j] = ((low < hi ? low : hi) * T(1.4426950408889634) + M::round_shift) - M::round_shift;
    v[j] = kept;
  }
  for (std::int64_t j = 0; j < n; ++j) {
    const T r = (v[j] - k[j] * M::ln2_hi) - k[j] * M::ln2_lo;
    const auto bits = static_cast<typename M::Int>(static_cast<typename M::Int>(k[j]) + M::bias) << M::mantissa;
    v[j] = taylor_tail<T, 0, M::exp_terms>(r) * __builtin_bit_cast(T, bits);  // std::bit_cast would not inline
  }
}

// out[j] = sigmoid(a[j] + b[j]) (b may be null: 0) for j < n.
template <class T>
void sigmoid_row(const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t s = 0; s < n; s += kChunk) {
    const std::int64_t m = n - s < kChunk ? n - s : kChunk;
    T* o = out + s;
    if (b)
      for (std::int64_t j = 0; j < m; ++j) o[j] = -(a[s + j] + b[s + j]);
    else
      for (std::int64_t j = 0; j < m; ++j) o[j] = -a[s + j];
    exp_chunk(o, m);
    for (std::int64_t j = 0; j < m; ++j) o[j] = T(1) / (T(1) + o[j]);
  }
}

// out[j] = tanh(a[j]) for j < n; out may be a.
template <class T>
void tanh_row(const T* a, T* out, std::int64_t n) {
  T y[kChunk], e[kChunk];
  for (std::int64_t s = 0; s < n; s += kChunk) {
    const std::int64_t m = n - s < kChunk ? n - s : kChunk;
    const T hi = MathTraits<T>::tanh_hi;
    for (std::int64_t j = 0; j < m; ++j) {
      const T x = a[s + j], ax = x < 0 ? -x : x;
      e[j] = y[j] = T(2) * (ax > hi ? hi : ax);  // NaN stays NaN
    }
    exp_chunk(e, m);
    for (std::int64_t j = 0; j < m; ++j) {
      const T series = y[j] * taylor_tail<T, 1, MathTraits<T>::expm1_terms>(y[j]);
      const T em1 = y[j] < T(0.5) ? series : e[j] - T(1);  // expm1(y) without cancellation
      const T t = em1 / (em1 + T(2));
      out[s + j] = a[s + j] < 0 ? -t : t;
    }
  }
}

}  // namespace RECUR_KERNEL_ISA
}  // namespace recur::detail

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC pop_options
#endif
