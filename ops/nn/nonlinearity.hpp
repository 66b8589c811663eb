#pragma once
// The Elman RNN's activation. A header of its own because the cell kernels compiled for
// another instruction set (cell_kernel_table_detail.hpp) may include nothing but kernels.

namespace recur::nn {

enum class Nonlinearity { tanh, relu };

}  // namespace recur::nn
