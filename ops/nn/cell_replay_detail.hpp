#pragma once
// Internal to the fused layer op (fused_recurrence.cpp): what an LSTM or GRU direction
// keeps for its backward, and the replay of the LSTM's cell states from it.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <utility>
#include <vector>

#include <recur/core/repeated_gemm.hpp>
#include <recur/core/tensor.hpp>
#include <recur/ops/kernels/cell_kernel_choice_detail.hpp>

namespace recur::nn::detail {

// What an LSTM's or a GRU's backward needs beyond the inputs and the output: the gate
// activations [T, B, G*H]; for an LSTM the cell states at every `interval`-th step of the
// loop, from which backward replays the others a segment at a time (an elementwise pass:
// c_t from c_{t-1} and the activations), so the cell states cost O(sqrt(T)) memory, not
// O(T); for a GRU in PyTorch's form h W_hn^T + b_hn at every step (its reset gate scales
// it). Backward overwrites the activations with the gate gradients and drops them; a
// second backward through the same node runs forward again first.
struct FusedSaved {
  Tensor act;
  Tensor cells;  // LSTM: [segments - 1, B, H]: c after loop steps interval - 1, 2 interval - 1, ...
  std::int64_t interval = 1;
  Tensor hn;  // GRU, PyTorch's form: [T, B, H]
  Tensor final_cell;  // LSTM with the cell state apart (fused_recurrence_split): c_T [B, H]
};

// The segment length for T steps: ceil(sqrt(T)).
inline std::int64_t replay_interval(std::int64_t steps) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::ceil(std::sqrt(static_cast<double>(steps)))));
}

// The cell states c_{s} (after loop step s) and c_{s-1} for s running down from the last
// step, replayed from the saved checkpoints one segment of `interval` steps at a time with
// the forward's own cell update (LstmKernel::cell_update), so bit for bit.
template <class T>
class CellReplay {
 public:
  CellReplay(const FusedSaved& saved, const T* act, const T* c0, std::int64_t steps, std::int64_t batch,
             std::int64_t n, bool reverse, std::vector<std::int64_t> lengths = {}, std::int64_t tiles = 1)
      : saved_(saved), act_(act), c0_(c0), steps_(steps), rows_(batch * n), batch_(batch), n_(n), tiles_(tiles),
        reverse_(reverse),
        lengths_(std::move(lengths)),
        states_(static_cast<std::size_t>(saved.interval * batch * n)) {}

  // {c after loop step s, c before it}. A segment's replay runs its rows in `tiles`
  // (blas::for_each_step_range), as the step's cell kernels do: each row's states are its own.
  std::pair<const T*, const T*> at(std::int64_t s) {
    const std::int64_t seg = s / saved_.interval, begin = seg * saved_.interval;
    if (seg != segment_) replay(seg, begin);
    const T* before = s == begin ? entry(seg) : state(s - begin - 1);
    return {state(s - begin), before};
  }

 private:
  const T* entry(std::int64_t seg) const {
    return seg == 0 ? c0_ : saved_.cells.data<T>() + (seg - 1) * rows_;
  }
  T* state(std::int64_t k) { return states_.data() + k * rows_; }
  void replay(std::int64_t seg, std::int64_t begin) {
    const std::int64_t end = std::min(steps_, begin + saved_.interval);
    const auto cell_update = kernels<T>().lstm.cell_update;
    const T* const start = entry(seg);
    blas::for_each_step_range(batch_, tiles_, [&](std::int64_t, std::int64_t first, std::int64_t last) {
      const T* prev = start;
      for (std::int64_t s = begin; s < end; ++s) {
        const std::int64_t t = reverse_ ? steps_ - 1 - s : s;
        const T* act = act_ + t * batch_ * 4 * n_;
        T* c = state(s - begin);
        for (std::int64_t b = first; b < last; ++b) {
          if (lengths_.empty() || t < lengths_[static_cast<std::size_t>(b)]) {
            cell_update(act + b * 4 * n_, prev + b * n_, c + b * n_, n_);
          } else {  // a finished element keeps its cell state (the fused op's lengths)
            std::copy(prev + b * n_, prev + (b + 1) * n_, c + b * n_);
          }
        }
        prev = c;
      }
    });
    segment_ = seg;
  }

  const FusedSaved& saved_;
  const T *act_, *c0_;
  std::int64_t steps_, rows_, batch_, n_, tiles_;
  bool reverse_;
  std::vector<std::int64_t> lengths_;  // empty: every element runs every step
  std::vector<T> states_;
  std::int64_t segment_ = -1;
};

}  // namespace recur::nn::detail
