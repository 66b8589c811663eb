#pragma once
// The parameters of one recurrent cell kept as shared variables, and the base of the
// modules that own them (the cells and the sequence layers): it registers them under
// PyTorch's names and draws them as PyTorch does, U(-1/sqrt(H), 1/sqrt(H)).
#include <cstdint>
#include <string>
#include <string_view>

#include <recur/autodiff/module.hpp>
#include <recur/autodiff/tape.hpp>
#include <recur/core/random.hpp>
#include <recur/ops/nn/cells.hpp>

namespace recur::nn {

struct CellParameters {
  Shared w_ih, w_hh, b_ih, b_hh;  // biases null when the module has none
  Shared w_hr;                    // a projected LSTM's weight_hr, else null
  // The member under PyTorch's name (cell_parameter_specs): weight_ih, ..., weight_hr.
  Shared& named(std::string_view name);
  // The values as Vars on `tape` (what the cell functions take).
  CellWeights read(Tape& tape) const;
};

class RecurrentModule : public Module {
 protected:
  // Registers the parameters of cell_parameter_specs (cell_kind.hpp) under their names +
  // `suffix`, drawn from `gen` in that order: weight_ih [G*H, I], weight_hh [G*H, h], with
  // `bias` bias_ih and bias_hh [G*H], and with a projection weight_hr [P, H].
  CellParameters add_cell_parameters(const std::string& suffix, CellKind kind, const CellSizes& sizes, bool bias,
                                     Generator& gen, DType dtype);
};

// ValueError naming `module` unless the sizes are >= 1 and the dtype is floating.
void check_recurrent_sizes(std::string_view module, std::int64_t input_size, std::int64_t hidden_size,
                           std::int64_t num_layers, DType dtype);

}  // namespace recur::nn
