#pragma once
// What every loader harness does with libFuzzer's bytes: put them in a file (the loaders
// read paths), run the loader, and accept recur's own errors as the clean outcome. Any
// other exception escapes and aborts, which libFuzzer reports as a crash, as it does for
// the sanitizers' findings.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <unistd.h>

#include <recur/core/error.hpp>

namespace recur::fuzz {

// One scratch file per process, rewritten for every input.
inline const std::filesystem::path& scratch_file() {
  static const std::filesystem::path p =
      std::filesystem::temp_directory_path() / ("recur_fuzz_" + std::to_string(::getpid()) + ".bin");
  return p;
}

template <class Load>
int run_on_file(const std::uint8_t* data, std::size_t size, Load&& load) {
  {
    std::ofstream out(scratch_file(), std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  try {
    load(scratch_file());
  } catch (const recur::Error&) {
    // IOError, DTypeError, ...: what a bad file must give.
  }
  return 0;
}

}  // namespace recur::fuzz
