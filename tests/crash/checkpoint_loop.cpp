// Saves training checkpoints to argv[1] in a loop, steps 1, 2, 3, ..., until killed:
// the victim of crash_safety.cpp.
#include <iostream>

#include "crash_state.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: checkpoint_loop <checkpoint.npz>\n";
    return 2;
  }
  recur::crash::StepState s;
  for (std::int64_t step = 1;; ++step) {
    s.set(step);
    recur::save_checkpoint(argv[1], s.state);
  }
}
