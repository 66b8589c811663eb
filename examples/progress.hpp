#pragma once
// A one-line progress bar for training loops: step, loss, throughput and ETA, redrawn in
// place on a terminal and printed as plain lines every `every` steps otherwise (logs, CI).
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <string>

namespace examples {

class Progress {
 public:
  Progress(long total, std::string unit, long every = 25)
      : total_(total), unit_(std::move(unit)), every_(every), tty_(isatty(STDOUT_FILENO) != 0),
        start_(std::chrono::steady_clock::now()) {}

  // Call after each step with the step's loss and how many units (characters, samples) it used.
  void update(long step, double loss, double units) {
    units_ += units;
    const double elapsed = seconds();
    const double rate = units_ / (elapsed > 0 ? elapsed : 1e-9);
    const double eta = elapsed / static_cast<double>(step - first_ + 1) * static_cast<double>(total_ - step);
    if (!tty_ && step % every_ != 0 && step != total_) return;
    constexpr int width = 24;
    const int filled = static_cast<int>(width * static_cast<double>(step) / static_cast<double>(total_));
    std::string bar(static_cast<std::size_t>(filled), '#');
    bar.resize(width, '.');
    std::printf("%s[%s] step %ld/%ld  loss %.4f  %.0f %s/s  ETA %s   %s", tty_ ? "\r" : "", bar.c_str(), step, total_, loss,
                rate, unit_.c_str(), clock(eta).c_str(), tty_ ? "" : "\n");
    std::fflush(stdout);
  }
  // Ends the bar's line before other output.
  void interrupt() const {
    if (tty_) std::printf("\n");
  }
  void start_at(long step) { first_ = step; }
  double seconds() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  }

 private:
  static std::string clock(double s) {
    const long t = static_cast<long>(s + 0.5);
    char buf[32];
    std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
    return buf;
  }
  long total_;
  std::string unit_;
  long every_;
  bool tty_;
  long first_ = 1;
  double units_ = 0;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace examples
