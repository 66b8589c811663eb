#pragma once
// The training state both crash-safety programs use: every value is a function of the
// step, so a loaded checkpoint shows whether it is one whole saved state.
#include <recur/recur.hpp>

namespace recur::crash {

struct StepState {
  Generator rng{7};
  TrainingState state;
  StepState() {
    state.parameters = {{"w", Shared(zeros({256, 256}, DType::float64), "w")},  // 512 KiB: saves take a while
                        {"b", Shared(zeros({16}, DType::float32), "b")}};
    state.optimizer_state = {{"t", Shared(scalar(0, DType::int64), "t")}};
    state.generators = {{"rng", &rng}};
  }
  // Every value of the state saved at `step`.
  void set(std::int64_t step) {
    const auto s = static_cast<double>(step);
    state.parameters[0].second.assign(full({256, 256}, s, DType::float64));
    state.parameters[1].second.assign(full({16}, -s, DType::float32));
    state.optimizer_state[0].second.assign(scalar(s, DType::int64));
    state.step = step;
  }
};

}  // namespace recur::crash
