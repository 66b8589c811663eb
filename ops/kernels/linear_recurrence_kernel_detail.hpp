#pragma once
// The loops behind linear_recurrence (ops/linear_recurrence.cpp), split into independent
// tiles for several threads. The result is viewed as [outer, steps, inner]: time is the
// middle axis and a step's `inner` contiguous elements (batch and features) are its lanes,
// which the innermost loops run over, so they vectorise.
//
// Tiles: lanes are independent, so they split into groups at no cost. When there are too
// few lanes for the threads, time splits into chunks too: each chunk runs sequentially from
// a zero start while accumulating the product of its coefficients, one short pass over the
// chunks carries the true state across their boundaries, and a second pass over each chunk
// adds (product of coefficients so far) * (carried state). That doubles the work, so it
// only pays with more than two threads.
#include <algorithm>
#include <cstdint>
#include <vector>

#include <recur/core/parallel.hpp>

namespace recur::detail {

struct TimeView {
  std::int64_t outer = 1, steps = 0, inner = 1;
};

struct RecurrenceSplit {
  std::int64_t lane_groups = 1, time_chunks = 1;
  int threads = 1;
};

// Below this many elements a kernel runs on the calling thread: starting threads costs more.
inline constexpr std::int64_t kMinParallelElements = std::int64_t{1} << 15;

inline RecurrenceSplit choose_split(const TimeView& v, int threads) {
  RecurrenceSplit s;
  if (threads < 2 || v.outer * v.steps * v.inner < kMinParallelElements) return s;
  s.threads = threads;
  if (v.outer >= threads) return s;  // the outer blocks alone give every thread work
  constexpr std::int64_t kLanesPerGroup = 16;  // two AVX2 vectors of float32
  s.lane_groups = std::min<std::int64_t>(threads, std::max<std::int64_t>(1, v.inner / kLanesPerGroup));
  if (s.lane_groups < threads && threads > 2)
    s.time_chunks = std::min<std::int64_t>(threads, std::max<std::int64_t>(1, v.steps / 64));
  return s;
}

// The recurrence x_k = c_k * x_{k-1} + d_k in processing order k, where step k is time
// t = k (forward) or steps - 1 - k (reverse). Element (o, t, i) of c is read at offset
// o * steps * inner + t * inner + i + coef_shift, which lets the backward pass read a one
// step later (or earlier) without forming a pointer outside the buffer. `start` ([outer,
// inner]) is x_{-1}; a null start means zero, and then c is not read at k = 0.
template <class T>
struct Recurrence {
  TimeView v;
  const T* c;
  std::int64_t coef_shift;
  const T* d;
  const T* start;
  T* x;
  bool reverse;

  std::int64_t at(std::int64_t o, std::int64_t k) const {
    const std::int64_t t = reverse ? v.steps - 1 - k : k;
    return o * v.steps * v.inner + t * v.inner;
  }

  // Steps [k0, k1) of lanes [l0, l1) of block o, from `from` (null: zero). When `product` is
  // given, it receives the product of the chunk's coefficients per lane.
  void run(std::int64_t o, std::int64_t l0, std::int64_t l1, std::int64_t k0, std::int64_t k1, const T* from,
           T* product) const {
    for_lane_blocks(l0, l1, [&]<std::int64_t W>(std::int64_t l) {
      if (product)
        run_lanes<W, true>(o, l, k0, k1, from ? from + l : nullptr, product + l);
      else
        run_lanes<W, false>(o, l, k0, k1, from ? from + l : nullptr, nullptr);
    });
  }

  // Adds (c_{k0} * ... * c_k) * carried to x_k over steps [k0, k1) of lanes [l0, l1).
  void add_carried(std::int64_t o, std::int64_t l0, std::int64_t l1, std::int64_t k0, std::int64_t k1,
                   const T* carried) const {
    for_lane_blocks(l0, l1, [&]<std::int64_t W>(std::int64_t l) {
      T q[W];
      for (std::int64_t i = 0; i < W; ++i) q[i] = carried[l + i];
      for (std::int64_t k = k0; k < k1; ++k) {
        const std::int64_t base = at(o, k) + l;
        T cc[W], out[W];
        std::copy_n(c + base + coef_shift, W, cc);
        std::copy_n(x + base, W, out);
        for (std::int64_t i = 0; i < W; ++i) {
          q[i] *= cc[i];
          out[i] += q[i];
        }
        std::copy_n(out, W, x + base);
      }
    });
  }

 private:
  // Calls f.template operator()<W>(l) over [l0, l1) in blocks of W = 16, 4 and 1 lanes: a
  // block's state lives in registers across the steps instead of going through memory.
  template <class F>
  static void for_lane_blocks(std::int64_t l0, std::int64_t l1, F&& f) {
    std::int64_t l = l0;
    for (; l + 16 <= l1; l += 16) f.template operator()<16>(l);
    for (; l + 4 <= l1; l += 4) f.template operator()<4>(l);
    for (; l < l1; ++l) f.template operator()<1>(l);
  }

  template <std::int64_t W, bool WithProduct>
  void run_lanes(std::int64_t o, std::int64_t l, std::int64_t k0, std::int64_t k1, const T* from, T* product) const {
    if (k0 >= k1) {
      if constexpr (WithProduct) std::fill(product, product + W, T(1));
      return;
    }
    T state[W], prod[W];
    std::int64_t k = k0;
    if (from) {
      for (std::int64_t i = 0; i < W; ++i) state[i] = from[i];
      for (std::int64_t i = 0; i < W; ++i) prod[i] = T(1);
    } else {  // the first step from zero: x = d, and the product starts there
      const std::int64_t base = at(o, k++) + l;
      for (std::int64_t i = 0; i < W; ++i) x[base + i] = state[i] = d[base + i];
      if constexpr (WithProduct)
        for (std::int64_t i = 0; i < W; ++i) prod[i] = c[base + i + coef_shift];
    }
    for (; k < k1; ++k) {
      const std::int64_t base = at(o, k) + l;
      // Loads into locals first: the output may not alias c or d for all the compiler knows,
      // which would keep it from vectorising the lanes.
      T cc[W], dd[W];
      std::copy_n(c + base + coef_shift, W, cc);
      std::copy_n(d + base, W, dd);
      for (std::int64_t i = 0; i < W; ++i) state[i] = cc[i] * state[i] + dd[i];
      std::copy_n(state, W, x + base);
      if constexpr (WithProduct)
        for (std::int64_t i = 0; i < W; ++i) prod[i] *= cc[i];
    }
    if constexpr (WithProduct) std::copy(prod, prod + W, product);
  }
};

inline std::int64_t split_point(std::int64_t n, std::int64_t parts, std::int64_t p) { return n * p / parts; }

template <class T>
void run_recurrence(const Recurrence<T>& r, const RecurrenceSplit& s) {
  const TimeView& v = r.v;
  if (v.steps == 0) return;
  // Every chunk holds at least one step: the carry pass reads each chunk's last state.
  const std::int64_t groups = s.lane_groups, chunks = std::min(s.time_chunks, v.steps);
  auto lanes = [&](std::int64_t g) { return std::pair{split_point(v.inner, groups, g), split_point(v.inner, groups, g + 1)}; };
  auto block_start = [&](std::int64_t o) { return r.start ? r.start + o * v.inner : nullptr; };
  if (chunks == 1) {
    parallel::for_each_task(v.outer * groups, s.threads, [&](std::int64_t task) {
      const std::int64_t o = task / groups;
      const auto [l0, l1] = lanes(task % groups);
      r.run(o, l0, l1, 0, v.steps, block_start(o), nullptr);
    });
    return;
  }
  // products[o][c] and carried[o][c] hold one value per lane.
  const std::int64_t per_block = chunks * v.inner;
  std::vector<T> products(static_cast<std::size_t>(v.outer * per_block));
  std::vector<T> carried(static_cast<std::size_t>(v.outer * per_block));
  auto chunk_steps = [&](std::int64_t c) { return std::pair{split_point(v.steps, chunks, c), split_point(v.steps, chunks, c + 1)}; };
  // Pass 1: every chunk from zero (chunk 0 from the true start, so it is final).
  parallel::for_each_task(v.outer * groups * chunks, s.threads, [&](std::int64_t task) {
    const std::int64_t c = task % chunks, g = (task / chunks) % groups, o = task / (chunks * groups);
    const auto [l0, l1] = lanes(g);
    const auto [k0, k1] = chunk_steps(c);
    T* product = products.data() + o * per_block + c * v.inner;
    r.run(o, l0, l1, k0, k1, c == 0 ? block_start(o) : nullptr, c == 0 ? nullptr : product);
  });
  // Pass 2: the true state entering each chunk, carried across the chunk boundaries.
  for (std::int64_t o = 0; o < v.outer; ++o)
    for (std::int64_t c = 1; c < chunks; ++c) {
      T* in = carried.data() + o * per_block + c * v.inner;
      const T* x_last = r.x + r.at(o, chunk_steps(c - 1).second - 1);
      if (c == 1) {
        std::copy(x_last, x_last + v.inner, in);
      } else {
        const T* prev_in = in - v.inner;
        const T* prev_product = products.data() + o * per_block + (c - 1) * v.inner;
        for (std::int64_t i = 0; i < v.inner; ++i) in[i] = x_last[i] + prev_product[i] * prev_in[i];
      }
    }
  // Pass 3: each later chunk gets its share of the carried state.
  parallel::for_each_task(v.outer * groups * (chunks - 1), s.threads, [&](std::int64_t task) {
    const std::int64_t c = 1 + task % (chunks - 1), g = (task / (chunks - 1)) % groups, o = task / ((chunks - 1) * groups);
    const auto [l0, l1] = lanes(g);
    const auto [k0, k1] = chunk_steps(c);
    r.add_carried(o, l0, l1, k0, k1, carried.data() + o * per_block + c * v.inner);
  });
}

}  // namespace recur::detail
