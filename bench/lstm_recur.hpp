#pragma once
// The recomputation benchmark's training step on recur: an LSTM-like cell run by scan
// (Theano's face) over the whole sequence, loss = mean of every step's h, gradients to
// Wx, Wh and b. Shared by recur_bench (time) and recur_lstm_memory (memory).
#include <cstddef>
#include <cstdint>

#include "recur_side.hpp"

namespace bench {

class RecurLstm {
 public:
  // `steps` time steps (the benchmark's kLstmSteps unless a curve asks for others).
  explicit RecurLstm(std::int64_t steps = kLstmSteps);
  // One training step on a fresh tape. With `bytes_held`, stores Tape::bytes_held()
  // measured right before backward (the walk over the tape is not free: time runs leave
  // it out).
  void step(const recur::Checkpoint& checkpoint, std::size_t* bytes_held = nullptr) const;

 private:
  recur::Tensor xs_, wx_, wh_, b_, h0_, c0_;
};

}  // namespace bench
