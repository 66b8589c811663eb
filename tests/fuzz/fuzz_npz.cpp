// libFuzzer harness for load_npz (core/npz.hpp): any bytes give named tensors or a recur::Error.
#include <recur/core/npz.hpp>

#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return recur::fuzz::run_on_file(data, size, [](const std::filesystem::path& p) { recur::load_npz(p); });
}
