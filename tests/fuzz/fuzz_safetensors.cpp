// libFuzzer harness for load_safetensors (core/safetensors.hpp): any bytes give named tensors
// and metadata or a recur::Error. F16 and BF16 are widened, so that their reads run too.
#include <recur/core/safetensors.hpp>

#include "fuzz_file.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return recur::fuzz::run_on_file(data, size, [](const std::filesystem::path& p) {
    recur::load_safetensors(p, {.convert_half_to_float32 = true});
  });
}
