// libFuzzer harness for load_checkpoint (autodiff/checkpoint.hpp) into a fixed small
// training state: any bytes restore it or give a recur::Error.
//
// Its seed is a checkpoint of that same state: with RECUR_FUZZ_WRITE_SEED=<file> the
// harness writes it there and exits (scripts/test.sh does so before fuzzing). Three
// mutations in four rewrite the archive's arrays (npz_mutator.hpp), so that inputs get past
// the ZIP's CRC to the checkpoint's own checks; the fourth flips bytes.
#include <cstdlib>
#include <iostream>

#include <recur/recur.hpp>

#include "fuzz_file.hpp"
#include "npz_mutator.hpp"

extern "C" std::size_t LLVMFuzzerMutate(std::uint8_t* data, std::size_t size, std::size_t max_size);

namespace {

struct State {
  recur::Generator dropout{1}, data{2};
  recur::TrainingState state;
  State() {
    using namespace recur;
    state.parameters = {{"lstm.weight_ih_l0", Shared(arange(0.0, 12.0, 1.0).view({4, 3}), "w")},
                        {"head.bias", Shared(tensor({0.5, -0.25}, DType::float64), "b")}};
    state.optimizer_state = {{"t", Shared(scalar(12, DType::int64), "t")}};
    state.extra = {{"carry.h", Shared(tensor({{0.25, -0.75, 1.0}}), "h")}};
    state.generators = {{"dropout", &dropout}, {"data", &data}};
    state.step = 42;
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* seed = std::getenv("RECUR_FUZZ_WRITE_SEED")) {
    State s;
    recur::save_checkpoint(seed, s.state);
    std::cout << "wrote the checkpoint seed " << seed << "\n";
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static State s;  // a successful load changes it; every state of the right layout will do
  return recur::fuzz::run_on_file(data, size, [](const std::filesystem::path& p) { recur::load_checkpoint(p, s.state); });
}

extern "C" std::size_t LLVMFuzzerCustomMutator(std::uint8_t* data, std::size_t size, std::size_t max_size,
                                               unsigned int seed) {
  if (seed % 4 != 0)
    if (const std::size_t rewritten = recur::fuzz::mutate_npz(data, size, max_size, seed)) return rewritten;
  return LLVMFuzzerMutate(data, size, max_size);
}
