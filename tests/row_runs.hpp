#pragma once
// Running a gradient-table row (grad_table.hpp) on given inputs, in either form, with what
// it threw recorded instead of propagated: the table tests compare the runs of a row.
#include <string>
#include <vector>

#include "grad_table.hpp"

namespace recur::testing {

// What one run gave: the output, or the recur::Error subclass it threw (any other
// exception is recorded as such, and is a defect: bad input must give a recur::Error).
struct Outcome {
  Tensor output;
  std::string error;    // the thrown type's name, empty when the run succeeded
  std::string message;  // what() of the exception
  bool threw() const { return !error.empty(); }
  bool recur_error = false;  // the exception was a recur::Error
  std::uint32_t nodes_recorded = 0;  // Var form: tape growth, also when it threw
};

// The row on Tensors; the row must have a Tensor form.
Outcome run_on_tensors(const GradCase& c, const std::vector<Tensor>& inputs);
// The row on Vars: the inputs become variables of a fresh tape.
Outcome run_on_vars(const GradCase& c, const std::vector<Tensor>& inputs);
// Outputs equal bit for bit: shape, dtype and every byte (NaN payloads included).
bool same_bits(const Tensor& a, const Tensor& b);
// "[2, 3] float64, [3] float32": for failure messages.
std::string describe(const std::vector<Tensor>& inputs);
// Every input converted to `dtype`.
std::vector<Tensor> converted(const std::vector<Tensor>& inputs, DType dtype);
// The row's name as a GoogleTest parameter name (letters, digits and '_').
std::string test_name_of_row(std::size_t row);

}  // namespace recur::testing
