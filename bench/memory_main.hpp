#pragma once
// The body of the memory programs (recur_lstm_memory, recur_lstm_memory_torch): run one
// configuration once and print what it used as one JSON line. The peak resident set
// (VmHWM) belongs to the whole process, so every configuration gets a process of its own
// and peaks never mix; scripts/bench.sh runs them and bench_table.py reads the lines.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace bench {

// A field of /proc/self/status given in kB ("VmHWM", "VmRSS"), in bytes; -1 when absent.
inline std::int64_t proc_status_bytes(std::string_view field) {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.starts_with(field) && line.size() > field.size() && line[field.size()] == ':')
      return std::stoll(line.substr(field.size() + 1)) * 1024;
  return -1;
}

struct MemoryMode {
  std::string_view name;
  // Builds the inputs and runs the configuration once; returns the bytes its tape held
  // for backward when the side can tell.
  std::function<std::optional<std::size_t>()> run;
};

// usage: PROGRAM MODE. Prints {"side", "mode", "rss_before_bytes" (resident set before the
// run: libraries and runtime), "peak_rss_bytes" (VmHWM after it), "bytes_held" or null}.
inline int memory_main(int argc, char** argv, std::string_view side, const std::vector<MemoryMode>& modes) {
  const MemoryMode* mode = nullptr;
  for (const auto& m : modes)
    if (argc == 2 && m.name == argv[1]) mode = &m;
  if (!mode) {
    std::fprintf(stderr, "usage: %s MODE, MODE one of:", argv[0]);
    for (const auto& m : modes) std::fprintf(stderr, " %.*s", static_cast<int>(m.name.size()), m.name.data());
    std::fprintf(stderr, "\n");
    return 2;
  }
  const std::int64_t before = proc_status_bytes("VmRSS");
  const std::optional<std::size_t> held = mode->run();
  const std::int64_t peak = proc_status_bytes("VmHWM");
  const std::string held_json = held ? std::to_string(*held) : "null";
  std::printf("{\"side\": \"%.*s\", \"mode\": \"%.*s\", \"rss_before_bytes\": %lld, \"peak_rss_bytes\": %lld, "
              "\"bytes_held\": %s}\n",
              static_cast<int>(side.size()), side.data(), static_cast<int>(mode->name.size()), mode->name.data(),
              static_cast<long long>(before), static_cast<long long>(peak), held_json.c_str());
  return 0;
}

}  // namespace bench
