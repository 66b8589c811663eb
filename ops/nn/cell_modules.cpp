#include <recur/ops/nn/cell_modules.hpp>

#include <recur/autodiff/record.hpp>
#include <recur/core/creation.hpp>

namespace recur::nn {

CellModule::CellModule(CellKind kind, const CellOptions& options, Generator& gen) : options_(options) {
  const std::string_view name = describe(kind).cell;
  check_recurrent_sizes(name, options.input_size, options.hidden_size, 1, options.dtype);
  weights_ = add_cell_parameters("", kind, {options.input_size, options.hidden_size, 0}, options.bias, gen, options.dtype);
}

Var CellModule::state_or_zeros(const Var& x, const Var& state) const {
  if (state.defined() || !x.defined() || x.rank() < 1) return state;  // the cell function reports bad x
  return x.tape().constant(zeros({x.size(0), options_.hidden_size}, x.dtype()));
}

CellWeights CellModule::read(const Var& x) const { return weights_.read(x.tape()); }

template <CellKind Kind>
Var CellOf<Kind>::operator()(const Var& x, const Var& h) const
  requires(Kind != CellKind::lstm)
{
  return transactional(x, [&] {
    if constexpr (Kind == CellKind::rnn) return rnn_cell(x, state_or_zeros(x, h), read(x), options().nonlinearity);
    else return gru_cell(x, state_or_zeros(x, h), read(x));
  });
}

template <CellKind Kind>
LstmState CellOf<Kind>::operator()(const Var& x, const Var& h, const Var& c) const
  requires(Kind == CellKind::lstm)
{
  return transactional(x, [&] { return lstm_cell(x, state_or_zeros(x, h), state_or_zeros(x, c), read(x)); });
}

template class CellOf<CellKind::rnn>;
template class CellOf<CellKind::lstm>;
template class CellOf<CellKind::gru>;

}  // namespace recur::nn
