#pragma once
// Cells a user writes with recur's ops and runs in scan (Theano's face), on the RNN suite's
// shapes and training step (rnn_suite.hpp: forward over T, mean squared error of every
// step's h against a fixed target, backward to every weight): the LSTM with one product per
// operand for all four gates, the LSTM with one weight per gate (the DeepLearning.net
// tutorial's form), and PyTorch's GRU. Against nn::LSTM and nn::GRU (rnn/<cell>/<config>/recur)
// they show what the fused layers gain over a hand-written step, recorded or captured.
// Shared by recur_bench (time) and recur_lstm_memory (memory).
#include <cstddef>
#include <optional>
#include <vector>

#include "recur_side.hpp"
#include "rnn_suite.hpp"

namespace bench {

enum class CellForm { lstm_merged, lstm_per_gate, gru_merged };
const char* form_name(CellForm form);

class ScanCellStep {
 public:
  ScanCellStep(CellForm form, const rnn::Config& config, recur::Capture capture);
  // One training step on a fresh tape; returns the loss. With `bytes_held`, stores
  // Tape::bytes_held() right before backward. `capture` (if given) says which path ran.
  double step(std::size_t* bytes_held = nullptr, recur::StepCapture* capture = nullptr) const;

 private:
  CellForm form_;
  rnn::Config config_;
  recur::Capture capture_;
  recur::Tensor xs_, target_;
  std::vector<recur::Tensor> weights_;  // the form's parameters, in its order
};

}  // namespace bench
