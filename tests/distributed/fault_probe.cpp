// A 2-rank training job in which rank 1 fails at step 3, for the fault tests (run by
// expect_failure.cmake under a time limit). Modes:
//   throw: rank 1 throws in its forward pass; abort_on_exception ends the job with its message
//   die:   rank 1 is killed (SIGKILL) in the middle of backward; mpirun ends the job
//   hang:  rank 1 stops answering (sleeps); rank 0's wait times out after 2 s (TimeoutError)
//          and ends the job
// (The other modes wait up to 30 s, so that a slow rank under a sanitizer is not mistaken
// for a hung one.)
// Without a fault the job would finish with exit 0 after 6 steps.
#include <chrono>
#include <csignal>
#include <optional>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <thread>

#include <recur/recur.hpp>
#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/gradient_reducer.hpp>

namespace {

using namespace recur;
using namespace recur::distributed;

// Kills this process from inside backward, once its gradient for `w` is final.
struct DieDuringBackward : BackwardObserver {
  void gradient_final(const Shared&) override { std::raise(SIGKILL); }
};

void train(const Communicator& comm, const std::string& mode) {
  Generator gen(1);
  Shared w(normal({64, 64}, 0, 0.1, gen, DType::float64), "w");
  broadcast(comm, std::vector<Shared>{w});
  GradientReducer reducer(comm, {w}, {.bucket_bytes = 1024});
  for (int step = 1; step <= 6; ++step) {
    const bool fault = comm.rank() == 1 && step == 3;
    if (fault && mode == "throw") throw std::runtime_error("injected failure in the forward pass of step 3");
    if (fault && mode == "hang") std::this_thread::sleep_for(std::chrono::hours(1));
    Tape tape;
    Var h = tanh(matmul(Var(w), Var(normal({64, 8}, 0, 1, gen, DType::float64))));
    DieDuringBackward die;
    std::optional<ObserveBackward> dying;
    if (fault && mode == "die") dying.emplace(die);
    tape.backward(sum(h * h));
    reducer.finish();
    const Tensor g = w.grad();
    w.update([&](Tensor& value) {
      for (std::int64_t i = 0; i < value.numel(); ++i) value.data<double>()[i] -= 0.01 * g.data<double>()[i];
    });
    w.zero_grad();
    if (comm.is_root()) std::printf("step %d done\n", step);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  Communicator comm({.timeout = std::chrono::seconds(mode == "hang" ? 2 : 30)});
  abort_on_exception(comm, [&] { train(comm, mode); });
  return 0;
}
