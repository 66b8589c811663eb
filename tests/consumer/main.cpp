// Checks that an installed recur links and computes: d/dx sum(x * x) = 2x.
#include <recur/recur.hpp>

#include <cmath>
#include <iostream>

int main() {
  recur::Tape tape;
  recur::Var x = tape.variable(recur::tensor({1.0, 2.0, 3.0}));
  tape.backward(recur::sum(x * x));
  const recur::Tensor g = x.grad();
  for (int i = 0; i < 3; ++i)
    if (std::abs(g.at({i}) - 2.0 * (i + 1)) > 1e-6) {
      std::cerr << "consumer: wrong gradient at " << i << ": " << g.at({i}) << "\n";
      return 1;
    }
  std::cout << "consumer: recur links and computes, the gradient of sum(x*x) is 2x\n";
  return 0;
}
