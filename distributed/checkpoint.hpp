#pragma once
// Training checkpoints of a data-parallel job: one file, written by rank 0 only (atomically,
// by autodiff/checkpoint.hpp's save_checkpoint), that resumes every rank where it was.
//
// Two forms. With a StreamState (below), the file holds the job's state per stream rather
// than per rank, and resumes on any number of ranks that can split the streams: a job of N
// ranks can go on on M (rescheduled on whatever machines are free). Without one, the
// file holds each rank's own members and resumes on the same number of ranks only.
//
// Both forms save the replicated members, the same on every rank after each step (gradients
// are averaged), once from rank 0, and broadcast them to every rank on load: parameters,
// optimizer_state, step. Errors are the same on every rank: a failure on rank 0 (a missing
// or corrupt file, a mismatch) is thrown on all ranks with rank 0's message, and a load that
// fails changes nothing (except a failure of MPI itself after rank 0 has read the file).
#include <filesystem>
#include <string>
#include <vector>

#include <recur/autodiff/checkpoint.hpp>
#include <recur/distributed/communicator.hpp>
#include <recur/distributed/sharding.hpp>

namespace recur::distributed {

// A checkpoint that cannot be resumed on this number of ranks: its streams (or its
// sampler's position) do not split between them. The message names both numbers of ranks.
struct ResizeError : ValueError { using ValueError::ValueError; };

// One variable that holds this rank's streams along `axis`, e.g. a TBPTT's carried h of
// shape [layers, B/p, H] with axis 1: saved as all B streams, loaded as the new rank's block.
struct StreamVariable {
  std::string name;
  Shared value;
  std::int64_t axis = 0;
};

// One generator per stream of this rank, in stream order: stream s's random state goes
// with stream s to whichever rank takes it.
struct StreamGenerators {
  std::string name;
  std::vector<Generator*> per_stream;
};

// The part of the state that belongs to the job's streams, not to its ranks. Rank r of p
// holds streams shard_range(streams, r, p) (as shard_streams gives them).
struct StreamState {
  std::int64_t streams = 0;  // the job's number of streams, every rank the same (0: none)
  std::vector<StreamVariable> variables{};
  std::vector<StreamGenerators> generators{};
  // A sampler of independent examples: its dataset size, epoch and position (all ranks'
  // examples taken, DistributedSampler::position) are saved; on load the new ranks take the
  // rest of the epoch from that position. nullptr: none.
  DistributedSampler* sampler = nullptr;
};

// The per-stream form. TrainingState's extra members and generators are replicated too:
// rank 0's are saved and every rank gets them on load (e.g. a generator every rank advances
// alike, or one only rank 0 uses). The file holds, besides the replicated members,
//   "extra/distributed.world_size", "extra/distributed.streams"   int64 scalars
//   "extra/distributed.stream/<name>"      a StreamVariable, all streams along its axis
//   "extra/distributed.stream_rng/<name>"  int64 [streams, 4], stream s's Generator::state()
//   "extra/distributed.sampler.{dataset_size,epoch,position}"  with a sampler
// Loading on M ranks: ResizeError (naming the file's and this job's number of ranks) when M
// does not divide the streams or the sampler's position; ValueError when the file has
// another number of streams or dataset size than `streams` says, or was written by the
// per-rank form; otherwise the members are checked as recur::load_checkpoint checks them
// (ValueError / ShapeError / DTypeError naming the member). Every rank must pass the same
// layout (number, dtypes and shapes of every member; ValueError otherwise), each of its
// stream variables holding streams / p streams along its axis and each StreamGenerators
// streams / p generators (ValueError naming the member otherwise).
void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state,
                     const StreamState& streams);
void load_checkpoint(const Communicator& comm, const std::filesystem::path& path, TrainingState& state,
                     StreamState& streams);
// Whether the checkpoint at `path`, written with a StreamState, resumes on `world` ranks,
// from the file alone and without MPI (a launcher can ask before it picks mpirun -np):
// the ResizeError load_checkpoint would throw when it cannot, ValueError when the file was
// not written with a StreamState (or world < 1), IOError when it cannot be read.
void check_resume(const std::filesystem::path& path, int world);

// The per-rank form: extra and generators are each rank's own (its streams' carried state,
// its random streams), gathered to rank 0 and saved as "extra/rank<r>/<name>" and
// "rng/rank<r>/<name>"; every rank must pass the same names, dtypes and shapes (ValueError
// otherwise). The file also holds "extra/distributed.world_size". Loading on another number
// of ranks is a ResizeError naming both: resume on the same number, or save with a
// StreamState.
void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state);
void load_checkpoint(const Communicator& comm, const std::filesystem::path& path, TrainingState& state);

}  // namespace recur::distributed
