#include <recur/ops/nn/cell_modules.hpp>

#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>

namespace recur::nn {

CellModule::CellModule(std::string_view name, std::int64_t gates, const CellOptions& options, Generator& gen)
    : options_(options) {
  check_recurrent_sizes(name, options.input_size, options.hidden_size, 1, options.dtype);
  weights_ = add_cell_parameters("", gates, options.input_size, options.hidden_size, options.bias, gen, options.dtype);
}

Var CellModule::state_or_zeros(const Var& x, const Var& state) const {
  if (state.defined() || !x.defined() || x.rank() < 1) return state;  // the cell function reports bad x
  return x.tape().constant(zeros({x.size(0), options_.hidden_size}, x.dtype()));
}

CellWeights CellModule::read(const Var& x) const { return weights_.read(x.tape()); }

RNNCell::RNNCell(const CellOptions& options, Generator& gen) : CellModule("RNNCell", 1, options, gen) {}
Var RNNCell::operator()(const Var& x, const Var& h) const {
  return transactional(x, [&] { return rnn_cell(x, state_or_zeros(x, h), read(x), options().nonlinearity); });
}

LSTMCell::LSTMCell(const CellOptions& options, Generator& gen) : CellModule("LSTMCell", 4, options, gen) {}
LstmState LSTMCell::operator()(const Var& x, const Var& h, const Var& c) const {
  return transactional(x, [&] { return lstm_cell(x, state_or_zeros(x, h), state_or_zeros(x, c), read(x)); });
}

GRUCell::GRUCell(const CellOptions& options, Generator& gen) : CellModule("GRUCell", 3, options, gen) {}
Var GRUCell::operator()(const Var& x, const Var& h) const {
  return transactional(x, [&] { return gru_cell(x, state_or_zeros(x, h), read(x)); });
}

}  // namespace recur::nn
