#pragma once
// Training checkpoints of a data-parallel job: one file, written by rank 0 only (atomically,
// by autodiff/checkpoint.hpp's save_checkpoint), that resumes every rank where it was.
//
// A TrainingState is read as two kinds of members:
//   parameters, optimizer_state, step: the same on every rank after each step (gradients
//     are averaged), saved once from rank 0 and broadcast to every rank on load;
//   extra, generators: each rank's own (its streams' carried state, its random streams),
//     gathered to rank 0 and saved as "extra/rank<r>/<name>" and "rng/rank<r>/<name>";
//     every rank must pass the same names, dtypes and shapes (ValueError otherwise).
// The file also holds "extra/distributed.world_size". Loading on another number of ranks is
// a ValueError saying so (the carried state belongs to the streams of each rank: resume on
// the same world size). Errors are the same on every rank: a failure on rank 0 (a missing
// or corrupt file, a mismatch) is thrown on all ranks with rank 0's message.
#include <filesystem>

#include <recur/autodiff/checkpoint.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed {

void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state);
void load_checkpoint(const Communicator& comm, const std::filesystem::path& path, TrainingState& state);

}  // namespace recur::distributed
