#pragma once
// Splitting the data between ranks.
//
// Sequence streams (a language model's parallel streams, truncated BPTT): each rank owns a
// contiguous block of the streams, the same block for the whole run, so that its
// TruncatedBptt carries each stream's state from window to window exactly as one process
// does. Rank r of p takes streams [r*B/p, (r+1)*B/p) of B; with the loss a mean over the
// rank's streams and gradients averaged over ranks (GradientReducer), p ranks compute the
// same step as one process over all B streams.
//
// Independent examples: DistributedSampler, PyTorch's sampler of the same name. Each epoch
// one permutation of the dataset, the same on every rank (seeded by seed + epoch); rank r
// takes positions r, r + p, r + 2p, ... of it. So batch i of every rank together is the
// slice [i*B*p, (i+1)*B*p) of that permutation: what one process with batch B*p would take
// with DistributedSampler(n, 0, 1).
//
// The sampler's position in the epoch counts the examples all ranks together have taken
// (a position in the epoch's permutation), so it means the same on any number of ranks: a
// job resumed on M ranks (distributed/checkpoint.hpp's StreamState) takes the rest of the
// permutation from there, rank r positions position + r, position + r + M, ...
#include <cstdint>
#include <vector>

#include <recur/core/tensor.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed {

struct Range {
  std::int64_t begin = 0, end = 0;
};

// Rank `rank`'s block of `count` items split between `world` ranks. ValueError unless
// 0 <= rank < world and count is a multiple of world (unequal shares would weigh the
// ranks' gradients unequally).
Range shard_range(std::int64_t count, int rank, int world);
// This rank's streams: the block of `streams` along `stream_axis` (the batch axis of a
// [time, batch, ...] tensor is 1), copied.
Tensor shard_streams(const Tensor& streams, std::int64_t stream_axis, int rank, int world);
Tensor shard_streams(const Tensor& streams, std::int64_t stream_axis, const Communicator& comm);

struct SamplerOptions {
  bool shuffle = true;      // false: the dataset in order
  std::uint64_t seed = 0;   // with the epoch, picks the permutation
  bool drop_last = false;   // drop the tail that does not fill every rank (else pad by repeating the start)
};

class DistributedSampler {
 public:
  DistributedSampler(std::int64_t dataset_size, int rank, int world, SamplerOptions options = {});
  DistributedSampler(std::int64_t dataset_size, const Communicator& comm, SamplerOptions options = {});

  // Starts `epoch` at its beginning (position 0).
  void set_epoch(std::int64_t epoch) { epoch_ = epoch, position_ = 0; }
  std::int64_t epoch() const { return epoch_; }
  // How many examples of the epoch's permutation the ranks together have taken: after k
  // batches of b per rank, k * b * world. ValueError unless 0 <= position and it is a
  // multiple of the world size (each rank's share starts at one of its own positions).
  void set_position(std::int64_t position);
  std::int64_t position() const { return position_; }
  // Indices per rank per epoch (from position 0).
  std::int64_t size() const { return per_rank_; }
  std::int64_t dataset_size() const { return dataset_size_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  // This rank's indices for the rest of the current epoch (from position() on), in the
  // order to visit them.
  std::vector<std::int64_t> indices() const;

 private:
  std::int64_t dataset_size_;
  int rank_, world_;
  SamplerOptions options_;
  std::int64_t per_rank_ = 0;
  std::int64_t epoch_ = 0;
  std::int64_t position_ = 0;
};

// A permutation of 0..n-1 drawn from Generator(seed): Fisher-Yates with unbiased bounded
// draws, the same on every platform.
std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed);

}  // namespace recur::distributed
