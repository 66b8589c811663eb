#pragma once
// The Elman RNN's activation. A header of its own because the cell kernels compiled for
// another instruction set (cell_kernel_table_detail.hpp) may include nothing but kernels.
#include <string_view>

namespace recur::nn {

enum class Nonlinearity { tanh, relu };
constexpr std::string_view name_of(Nonlinearity n) { return n == Nonlinearity::tanh ? "tanh" : "relu"; }

}  // namespace recur::nn
