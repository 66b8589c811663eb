#include <recur/distributed/sharding.hpp>

#include <numeric>

#include <recur/core/random.hpp>
#include <recur/ops/indexing.hpp>

namespace recur::distributed {
namespace {

void check_rank(std::string_view op, int rank, int world) {
  if (world < 1 || rank < 0 || rank >= world) fail<ValueError>(op, "rank ", rank, " is not in a world of ", world);
}

// Uniform in [0, bound): Lemire's multiply-shift with rejection, exact for any bound.
std::uint64_t below(Generator& gen, std::uint64_t bound) {
  const std::uint64_t threshold = -bound % bound;
  for (;;) {
    const unsigned __int128 m = static_cast<unsigned __int128>(gen.next_u64()) * bound;
    if (static_cast<std::uint64_t>(m) >= threshold) return static_cast<std::uint64_t>(m >> 64);
  }
}

}  // namespace

Range shard_range(std::int64_t count, int rank, int world) {
  check_rank("shard_range", rank, world);
  if (count < 0 || count % world != 0)
    fail<ValueError>("shard_range", count, " streams cannot be split evenly between ", world,
                     " ranks; use a multiple of the world size");
  const std::int64_t share = count / world;
  return {rank * share, (rank + 1) * share};
}

Tensor shard_streams(const Tensor& streams, std::int64_t stream_axis, int rank, int world) {
  if (!streams.defined()) fail<ValueError>("shard_streams", "the streams are undefined");
  if (stream_axis < 0 || stream_axis >= streams.rank())
    fail<AxisError>("shard_streams", "stream_axis ", stream_axis, " is out of range for shape ", to_string(streams.shape()));
  const Range r = shard_range(streams.shape()[static_cast<std::size_t>(stream_axis)], rank, world);
  return slice(streams, stream_axis, r.begin, r.end);
}

Tensor shard_streams(const Tensor& streams, std::int64_t stream_axis, const Communicator& comm) {
  return shard_streams(streams, stream_axis, comm.rank(), comm.size());
}

std::vector<std::int64_t> permutation(std::int64_t n, std::uint64_t seed) {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  std::iota(p.begin(), p.end(), 0);
  Generator gen(seed);
  for (std::int64_t i = n - 1; i > 0; --i)
    std::swap(p[static_cast<std::size_t>(i)], p[below(gen, static_cast<std::uint64_t>(i) + 1)]);
  return p;
}

DistributedSampler::DistributedSampler(std::int64_t dataset_size, int rank, int world, SamplerOptions options)
    : dataset_size_(dataset_size), rank_(rank), world_(world), options_(options) {
  check_rank("DistributedSampler", rank, world);
  if (dataset_size < 1) fail<ValueError>("DistributedSampler", "the dataset is empty (size ", dataset_size, ")");
  // Rounded up without forming dataset_size + world - 1, which can pass int64.
  per_rank_ = dataset_size / world + (!options.drop_last && dataset_size % world != 0 ? 1 : 0);
  if (per_rank_ == 0)
    fail<ValueError>("DistributedSampler", "with drop_last, ", dataset_size, " examples leave none for each of ", world, " ranks");
}

DistributedSampler::DistributedSampler(std::int64_t dataset_size, const Communicator& comm, SamplerOptions options)
    : DistributedSampler(dataset_size, comm.rank(), comm.size(), options) {}

std::vector<std::int64_t> DistributedSampler::indices() const {
  std::vector<std::int64_t> order(static_cast<std::size_t>(dataset_size_));
  if (options_.shuffle) order = permutation(dataset_size_, options_.seed + static_cast<std::uint64_t>(epoch_));
  else std::iota(order.begin(), order.end(), 0);
  const std::int64_t total = per_rank_ * world_;
  for (std::int64_t i = dataset_size_; i < total; ++i) order.push_back(order[static_cast<std::size_t>(i % dataset_size_)]);
  std::vector<std::int64_t> mine;
  for (std::int64_t i = position_ + rank_; i < total; i += world_) mine.push_back(order[static_cast<std::size_t>(i)]);
  return mine;
}

void DistributedSampler::set_position(std::int64_t position) {
  if (position < 0 || position % world_ != 0)
    fail<ValueError>("DistributedSampler::set_position", "position ", position,
                     " is not a multiple of the world size ", world_, " (the examples all ranks together have taken)");
  position_ = position;
}

}  // namespace recur::distributed
