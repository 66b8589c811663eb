// The cell kernels compiled for the target's baseline instruction set
// (cell_kernel_table_detail.hpp).
#include <recur/ops/kernels/cell_kernel_table_detail.hpp>

namespace recur::nn::detail {

template <class T>
const KernelTable<T>& portable_kernels() {
  static constexpr KernelTable<T> table = this_isa_kernels<T>();
  return table;
}

template const KernelTable<float>& portable_kernels<float>();
template const KernelTable<double>& portable_kernels<double>();

}  // namespace recur::nn::detail
