#include <recur/ops/nn/cell_parameters.hpp>

#include <algorithm>
#include <cmath>

#include <recur/ops/nn/init.hpp>

namespace recur::nn {

CellWeights CellParameters::read(Tape& tape) const {
  auto on_tape = [&](const Shared& s) { return s.defined() ? tape.read(s) : Var(); };
  return {on_tape(w_ih), on_tape(w_hh), on_tape(b_ih), on_tape(b_hh), on_tape(w_hr)};
}

Shared& CellParameters::named(std::string_view name) {
  if (name == "weight_ih") return w_ih;
  if (name == "weight_hh") return w_hh;
  if (name == "bias_ih") return b_ih;
  if (name == "bias_hh") return b_hh;
  if (name == "weight_hr") return w_hr;
  fail<ValueError>("CellParameters", "no parameter named '", name, "'");
}

CellParameters RecurrentModule::add_cell_parameters(const std::string& suffix, CellKind kind, const CellSizes& sizes,
                                                    bool bias, Generator& gen, DType dtype) {
  const double k = 1.0 / std::sqrt(static_cast<double>(sizes.hidden));
  CellParameters p;
  for (const CellParameterSpec& spec : cell_parameter_specs(kind, sizes, bias))
    p.named(spec.name) = register_parameter(spec.name + suffix, init::uniform(spec.shape, gen, -k, k, dtype));
  return p;
}

void check_recurrent_sizes(std::string_view module, std::int64_t input_size, std::int64_t hidden_size,
                           std::int64_t num_layers, DType dtype) {
  if (input_size < 1 || hidden_size < 1 || num_layers < 1)
    fail<ValueError>(module, "input_size (", input_size, "), hidden_size (", hidden_size, ") and num_layers (",
                     num_layers, ") must be at least 1");
  // The weights have 4 x hidden_size rows (LSTM) of max(input_size, hidden_size) columns:
  // sizes whose product passes int64 are refused here, before any product is formed.
  const std::int64_t columns = std::max(input_size, hidden_size);
  std::int64_t rows = 0, elements = 0;
  if (__builtin_mul_overflow(hidden_size, std::int64_t{8}, &rows) || __builtin_mul_overflow(rows, columns, &elements))
    fail<ValueError>(module, "input_size (", input_size, ") and hidden_size (", hidden_size,
                     ") give weights with more elements than an int64 counts");
  if (!is_floating(dtype)) fail<ValueError>(module, "dtype must be float32 or float64, got ", dtype);
}

}  // namespace recur::nn
