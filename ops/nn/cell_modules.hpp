#pragma once
// RNNCell, LSTMCell and GRUCell: one step of ops/nn/cells.hpp with its own parameters,
// named as in PyTorch (weight_ih, weight_hh, bias_ih, bias_hh) and drawn from
// U(-1/sqrt(H), 1/sqrt(H)). Inputs x [B, input_size]; a missing h (or c) is zeros.
#include <cstdint>

#include <recur/ops/nn/cell_parameters.hpp>

namespace recur::nn {

struct CellOptions {
  std::int64_t input_size = 0;
  std::int64_t hidden_size = 0;
  bool bias = true;
  Nonlinearity nonlinearity = Nonlinearity::tanh;  // RNNCell only
  DType dtype = DType::float32;
};

// What the three cells share: options, parameters, and the zero state for a missing one.
class CellModule : public RecurrentModule {
 public:
  const CellOptions& options() const { return options_; }
  const CellParameters& weights() const { return weights_; }

 protected:
  CellModule(CellKind kind, const CellOptions& options, Generator& gen);
  // `state` itself, or zeros [B, H] on x's tape when it is undefined.
  Var state_or_zeros(const Var& x, const Var& state) const;
  // The parameters as Vars on x's tape. (Callers wrap both in transactional: a cell that
  // rejects its arguments leaves the tape as it was.)
  CellWeights read(const Var& x) const;

 private:
  CellOptions options_;
  CellParameters weights_;
};

// RNNCell and GRUCell: cell(x, h) -> h' [B, H]; LSTMCell: cell(x, h, c) -> {h', c'}.
template <CellKind Kind>
class CellOf : public CellModule {
 public:
  CellOf(const CellOptions& options, Generator& gen) : CellModule(Kind, options, gen) {}
  Var operator()(const Var& x, const Var& h = Var()) const
    requires(Kind != CellKind::lstm);
  LstmState operator()(const Var& x, const Var& h = Var(), const Var& c = Var()) const
    requires(Kind == CellKind::lstm);
};

using RNNCell = CellOf<CellKind::rnn>;
using LSTMCell = CellOf<CellKind::lstm>;
using GRUCell = CellOf<CellKind::gru>;

}  // namespace recur::nn
