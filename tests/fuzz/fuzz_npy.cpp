// libFuzzer harness for load_npy (core/npy.hpp): any bytes give a tensor or a recur::Error.
#include <recur/core/npy.hpp>

#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return recur::fuzz::run_on_file(data, size, [](const std::filesystem::path& p) { recur::load_npy(p); });
}
