// Prints recur::blas_info() after one product, one "key=value" per line.
#include <iostream>

#include <recur/recur.hpp>

int main() {
  const recur::Tensor a = recur::ones({4, 4}), b = recur::ones({4, 4});
  if (recur::to_vector<float>(recur::matmul(a, b))[0] != 4.0F) return 1;
  const recur::BlasInfo info = recur::blas_info();
  std::cout << "core=" << info.core << "\nopenblas_core=" << info.openblas_core << "\nswitched=" << info.switched
            << "\nreason=" << info.reason << "\n";
}
