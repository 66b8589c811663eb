// Crash safety of save_checkpoint: starts checkpoint_loop, kills it with SIGKILL at a
// random moment, and checks what is on disk, at least kKills times:
//  - the checkpoint loads and is one whole saved state (every value matches its step),
//  - besides it, only the temporaries of killed saves remain ("<name>.tmp-<pid>-<hex>"),
//  - the next save removes those (write_atomically cleans temporaries of dead processes),
//    so that at the end the directory holds the checkpoint alone.
// Usage: crash_safety <checkpoint_loop> <scratch directory>; exit 0 when all holds.
#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <string>
#include <sys/wait.h>
#include <thread>
#include <unistd.h>

#include "crash_state.hpp"

namespace fs = std::filesystem;

namespace {

constexpr int kKills = 120;

[[noreturn]] void fail(const std::string& why) {
  std::cerr << "crash_safety: FAILED: " << why << "\n";
  std::exit(1);
}

// The state loaded from `path` is the one saved at its step.
void check_whole(const fs::path& path) {
  recur::crash::StepState got;
  recur::load_checkpoint(path, got.state);  // IOError on a torn file
  const double s = static_cast<double>(got.state.step);
  const recur::Tensor w = got.state.parameters[0].second.value(), b = got.state.parameters[1].second.value();
  for (double v : recur::to_vector<double>(w))
    if (v != s) fail("step " + std::to_string(got.state.step) + " but w holds " + std::to_string(v));
  for (float v : recur::to_vector<float>(b))
    if (v != -static_cast<float>(s)) fail("step " + std::to_string(got.state.step) + " but b holds " + std::to_string(v));
  if (got.state.optimizer_state[0].second.value().at<std::int64_t>({}) != got.state.step) fail("t differs from the step");
}

std::set<std::string> others(const fs::path& dir, const fs::path& keep) {
  std::set<std::string> names;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path() != keep) names.insert(e.path().filename().string());
  return names;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) fail("usage: crash_safety <checkpoint_loop> <scratch directory>");
  const fs::path dir = argv[2], ckpt = dir / "ckpt.npz";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const unsigned seed = std::random_device{}();
  std::mt19937 rng(seed);
  // Kills land up to max_delay_us after the start; a writer that starts slowly (a loaded
  // machine, a sanitizer build) gets more time until its first save can complete.
  int max_delay_us = 30000;
  std::set<pid_t> killed;
  int kills = 0, checked = 0, mid_save = 0;
  std::int64_t last_step = 0;
  while (checked < kKills) {
    if (kills > 10 * kKills) fail("the writer never got a checkpoint out");
    const pid_t pid = ::fork();
    if (pid < 0) fail("fork failed");
    if (pid == 0) {
      ::execl(argv[1], argv[1], ckpt.c_str(), static_cast<char*>(nullptr));
      std::_Exit(127);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(std::uniform_int_distribution<int>(0, max_delay_us)(rng)));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFSIGNALED(status)) fail("the writer ended by itself (status " + std::to_string(status) + ")");
    ++kills;
    killed.insert(pid);
    for (const std::string& name : others(dir, ckpt)) {
      const std::string prefix = "ckpt.npz.tmp-";
      const auto dash = name.find('-', prefix.size());
      if (name.rfind(prefix, 0) != 0 || dash == std::string::npos ||
          !killed.count(static_cast<pid_t>(std::stol(name.substr(prefix.size(), dash - prefix.size())))))
        fail("unexpected file left behind: " + name);
      if (static_cast<pid_t>(std::stol(name.substr(prefix.size(), dash - prefix.size()))) == pid) ++mid_save;
    }
    if (!fs::exists(ckpt)) {  // killed before its first save completed
      max_delay_us = std::min(2 * max_delay_us, 2'000'000);
      continue;
    }
    check_whole(ckpt);
    ++checked;
    recur::crash::StepState s;
    recur::load_checkpoint(ckpt, s.state);
    last_step = s.state.step;
  }
  // One more save, as the next run would do: the temporaries of the killed saves go.
  recur::crash::StepState s;
  s.set(last_step + 1);
  recur::save_checkpoint(ckpt, s.state);
  check_whole(ckpt);
  if (const auto left = others(dir, ckpt); !left.empty()) fail("the next save left " + *left.begin() + " behind");
  fs::remove_all(dir);
  std::cout << "crash_safety: " << kills << " SIGKILLs (seed " << seed << "), " << checked
            << " checkpoints checked whole, " << mid_save << " kills landed inside a save; no file left behind\n";
  return 0;
}
