// Checks that an installed recur links and computes: d/dx sum(x * x) = 2x; and that its
// file formats work without their build-time dependencies (nlohmann-json for safetensors).
#include <recur/recur.hpp>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <unistd.h>

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
  const auto file =
      std::filesystem::temp_directory_path() / ("recur_consumer_" + std::to_string(::getpid()) + ".safetensors");
  recur::save_safetensors(file, {{"grad", g}}, {{"format", "pt"}});
  const recur::Safetensors loaded = recur::load_safetensors(file);
  std::filesystem::remove(file);
  if (loaded.tensors.size() != 1 || recur::max_abs_diff(loaded.tensors[0].second, g) != 0) {
    std::cerr << "consumer: the safetensors round trip lost the gradient\n";
    return 1;
  }
  std::cout << "consumer: recur links and computes, the gradient of sum(x*x) is 2x (and a safetensors round trip keeps it)\n";
  return 0;
}
