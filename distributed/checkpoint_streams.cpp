// The per-stream form of a data-parallel checkpoint (distributed/checkpoint.hpp): the job's
// state per stream, resumed on any number of ranks that can split the streams.
#include <recur/distributed/checkpoint.hpp>

#include <deque>

#include <recur/distributed/checkpoint_files_detail.hpp>

namespace recur::distributed {
namespace {

using namespace checkpoint_detail;

// What a rank holds of a StreamState, read and checked: its stream variables' values and,
// per StreamGenerators, its generators' states stacked ([streams / p, 4]), in that order.
std::vector<Tensor> stream_values(const StreamState& streams, std::string_view op) {
  if (streams.streams < 0) fail<ValueError>(op, "StreamState::streams is ", streams.streams);
  std::vector<Tensor> values;
  for (const StreamVariable& v : streams.variables) {
    if (!v.value.defined()) fail<ValueError>(op, "stream variable '", v.name, "' is a null Shared handle");
    if (v.axis < 0 || v.axis >= static_cast<std::int64_t>(v.value.shape().size()))
      fail<AxisError>(op, "stream variable '", v.name, "': axis ", v.axis, " is out of range for shape ",
                      to_string(v.value.shape()));
    values.push_back(v.value.value());
  }
  for (const StreamGenerators& g : streams.generators) {
    std::vector<Tensor> states;
    for (const Generator* generator : g.per_stream) {
      if (!generator) fail<ValueError>(op, "stream generators '", g.name, "': a null pointer");
      states.push_back(generator->state());
    }
    values.push_back(states.empty() ? Tensor::empty({0, 4}, DType::int64) : stack(states));
  }
  return values;
}

// Each stream variable and StreamGenerators holds streams / world streams.
void check_stream_counts(const StreamState& streams, const std::vector<Tensor>& values, int world, std::string_view op) {
  const std::int64_t total = streams.streams;
  if (total % world != 0)
    fail<ValueError>(op, total, " streams cannot be split evenly between ", ranks(world));
  for (std::size_t k = 0; k < values.size(); ++k) {
    const bool variable = k < streams.variables.size();
    const std::int64_t axis = variable ? streams.variables[k].axis : 0;
    const std::int64_t held = values[k].shape()[static_cast<std::size_t>(axis)];
    if (held * world != total)
      fail<ValueError>(op, variable ? "stream variable '" : "stream generators '",
                       variable ? streams.variables[k].name : streams.generators[k - streams.variables.size()].name,
                       "' holds ", held, variable ? " streams along axis " + std::to_string(axis) : " generators",
                       "; ", total, " streams on ", ranks(world), " are ", total / world, " each");
  }
}

// Everything whose number, dtypes and shapes every rank must share.
std::vector<std::int64_t> job_layout(const TrainingState& state, const StreamState& streams,
                                     const std::vector<Tensor>& stream_part, std::string_view op) {
  std::vector<Tensor> values;
  for (const NamedShared* group : {&state.parameters, &state.optimizer_state, &state.extra})
    for (const auto& [name, shared] : *group) {
      if (!shared.defined()) fail<ValueError>(op, "'", name, "' is a null Shared handle");
      values.push_back(shared.value());
    }
  for (const auto& [name, generator] : state.generators) {
    if (!generator) fail<ValueError>(op, "generator '", name, "' is a null pointer");
    values.push_back(generator->state());
  }
  values.insert(values.end(), stream_part.begin(), stream_part.end());
  std::vector<std::int64_t> layout{streams.streams, streams.sampler ? 1 : 0};
  for (const StreamVariable& v : streams.variables) layout.push_back(v.axis);
  const std::vector<std::int64_t> shapes = detail::layout_of(values);
  layout.insert(layout.end(), shapes.begin(), shapes.end());
  return layout;
}

// Reads and checks this rank's StreamState and that every rank passes the same layout.
std::vector<Tensor> agreed_stream_values(const Communicator& comm, const TrainingState& state,
                                         const StreamState& streams, std::string_view op) {
  std::vector<Tensor> values;
  std::vector<std::int64_t> layout;
  failing_alike(comm, op, true, [&] {
    values = stream_values(streams, op);
    layout = job_layout(state, streams, values, op);
    if (streams.sampler && (streams.sampler->rank() != comm.rank() || streams.sampler->world() != comm.size()))
      fail<ValueError>(op, "the sampler is rank ", streams.sampler->rank(), " of ", streams.sampler->world(),
                       " but this is rank ", comm.rank(), " of ", comm.size());
  });
  detail::check_same_layout(comm, op, layout, "members (parameters, optimizer state, extras, generators, streams)");
  return values;
}

// The file's members of a StreamState over all `total` streams: a variable with its axis
// that long, a StreamGenerators as [total, 4].
Shape whole_shape(const Tensor& mine, std::int64_t axis, std::int64_t total) {
  Shape shape = mine.shape();
  shape[static_cast<std::size_t>(axis)] = total;
  return shape;
}

// The stream members' axes, in stream_values' order.
std::vector<std::int64_t> stream_axes(const StreamState& streams) {
  std::vector<std::int64_t> axes;
  for (const StreamVariable& v : streams.variables) axes.push_back(v.axis);
  axes.resize(streams.variables.size() + streams.generators.size(), 0);
  return axes;
}

std::vector<std::string> stream_members(const StreamState& streams) {
  std::vector<std::string> names;
  for (const StreamVariable& v : streams.variables) names.push_back(kStream + v.name);
  for (const StreamGenerators& g : streams.generators) names.push_back(kStreamRng + g.name);
  return names;
}

// The TrainingState rank 0 writes or reads: the replicated members, the sizes, the stream
// members over all streams (`whole`, in stream_values' order) and the sampler's position.
TrainingState whole_streams_job(const TrainingState& state, const StreamState& streams, int world,
                                const std::vector<Shared>& whole, const std::vector<Shared>& sampler) {
  TrainingState job = state;
  job.extra.emplace_back(kWorldSize, int64_shared(world, kWorldSize));
  job.extra.emplace_back(kStreams, int64_shared(streams.streams, kStreams));
  const std::vector<std::string> names = stream_members(streams);
  for (std::size_t k = 0; k < names.size(); ++k) job.extra.emplace_back(names[k], whole[k]);
  for (const Shared& s : sampler) job.extra.emplace_back(s.name(), s);
  return job;
}

std::vector<Shared> sampler_members(const DistributedSampler* sampler) {
  if (!sampler) return {};
  return {int64_shared(sampler->dataset_size(), kSamplerSize), int64_shared(sampler->epoch(), kSamplerEpoch),
          int64_shared(sampler->position(), kSamplerPosition)};
}

// A checkpoint's int64 scalar member `name` (under "extra/"), or `otherwise` when absent.
std::int64_t extra_scalar(const TensorMap& members, const char* name, std::int64_t otherwise) {
  const auto found = members.find(std::string("extra/") + name);
  return found == members.end() || found->second.numel() != 1 ? otherwise : found->second.item<std::int64_t>();
}

// The number of streams of a checkpoint written with a StreamState; ResizeError when
// `world` ranks cannot split them or its sampler's position, ValueError when it was not
// written with a StreamState.
std::int64_t check_mappable(const TensorMap& members, const std::filesystem::path& path, int world, std::string_view op) {
  const std::int64_t saved = saved_world(members, path, op);
  if (!has_streams(members))
    fail<ValueError>(op, "'", path.string(), "' holds each rank's own state (written by save_checkpoint without a ",
                     "StreamState on ", ranks(saved), "): load it without a StreamState, on ", ranks(saved));
  const std::int64_t total = extra_scalar(members, kStreams, 0);
  if (total % world != 0)
    fail<ResizeError>(op, "'", path.string(), "' was written by ", ranks(saved), " and this job has ", ranks(world),
                      ": its ", total, " streams cannot be split evenly between ", ranks(world),
                      "; resume on a number of ranks that divides ", total);
  const std::int64_t at = extra_scalar(members, kSamplerPosition, 0);
  if (at % world != 0)
    fail<ResizeError>(op, "'", path.string(), "' was written by ", ranks(saved), " and this job has ", ranks(world),
                      ": its sampler is at example ", at, " of the epoch, which ", ranks(world),
                      " cannot take from evenly; resume on a number of ranks that divides ", at);
  return total;
}

// The file's "extra/distributed.stream_rng/<name>" rows each a state Generator accepts (so
// that no rank fails to set one after rank 0 has loaded).
void check_stream_rng(const TensorMap& members, const StreamState& streams, const std::filesystem::path& path,
                      std::string_view op) {
  for (const StreamGenerators& g : streams.generators) {
    const auto found = members.find(std::string("extra/") + kStreamRng + g.name);
    if (found == members.end() || found->second.rank() != 2 || found->second.dtype() != DType::int64) continue;
    for (std::int64_t s = 0; s < found->second.shape()[0]; ++s) {
      try {
        Generator(0).set_state(index(found->second, 0, s));
      } catch (const Error& e) {
        fail<ValueError>(op, "'", path.string(), "': member 'extra/", kStreamRng, g.name, "', stream ", s, ": ", e.what());
      }
    }
  }
}

// The replicated values not held in Shareds, rank 0's sent to every rank: the step, the
// sampler's epoch and position, the replicated generators' states.
void broadcast_scalars(const Communicator& comm, TrainingState& state, std::int64_t& epoch, std::int64_t& position,
                       std::string_view op) {
  std::vector<Tensor> values{scalar(static_cast<double>(state.step), DType::int64),
                             scalar(static_cast<double>(epoch), DType::int64),
                             scalar(static_cast<double>(position), DType::int64)};
  for (const auto& [name, generator] : state.generators) values.push_back(generator->state());
  std::vector<char> bytes = comm.is_root() ? detail::pack(values) : std::vector<char>();
  detail::broadcast_bytes(comm, bytes, op);
  if (comm.is_root()) return;
  std::size_t offset = 0;
  const std::vector<Tensor> received = detail::unpack(values, bytes.data(), offset);
  state.step = received[0].item<std::int64_t>();
  epoch = received[1].item<std::int64_t>();
  position = received[2].item<std::int64_t>();
  for (std::size_t g = 0; g < state.generators.size(); ++g) state.generators[g].second->set_state(received[3 + g]);
}
}  // namespace

void check_resume(const std::filesystem::path& path, int world) {
  if (world < 1) fail<ValueError>("distributed::check_resume", "a job of ", world, " ranks");
  check_mappable(load_npz_map(path), path, world, "distributed::check_resume");
}

void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state,
                     const StreamState& streams) {
  const char* op = "distributed::save_checkpoint";
  const std::vector<Tensor> mine = agreed_stream_values(comm, state, streams, op);
  failing_alike(comm, op, true, [&] { check_stream_counts(streams, mine, comm.size(), op); });
  const std::vector<char> bytes = detail::pack(mine);
  std::vector<char> all(comm.is_root() ? bytes.size() * static_cast<std::size_t>(comm.size()) : 0);
  detail::gather_bytes(comm, bytes, all, op);
  failing_alike(comm, op, comm.is_root(), [&] {
    // Rank r's blocks are streams [r*B/p, (r+1)*B/p): joined in rank order, all B streams.
    std::vector<std::vector<Tensor>> blocks(mine.size());
    std::size_t offset = 0;
    for (int r = 0; r < comm.size(); ++r) {
      const std::vector<Tensor> rank_blocks = detail::unpack(mine, all.data(), offset);
      for (std::size_t k = 0; k < mine.size(); ++k) blocks[k].push_back(rank_blocks[k]);
    }
    const std::vector<std::int64_t> axes = stream_axes(streams);
    std::vector<Shared> whole;
    for (std::size_t k = 0; k < mine.size(); ++k) whole.emplace_back(concat(blocks[k], axes[k]), "whole");
    recur::save_checkpoint(path, whole_streams_job(state, streams, comm.size(), whole, sampler_members(streams.sampler)));
  });
}

void load_checkpoint(const Communicator& comm, const std::filesystem::path& path, TrainingState& state,
                     StreamState& streams) {
  const char* op = "distributed::load_checkpoint";
  const std::vector<Tensor> mine = agreed_stream_values(comm, state, streams, op);
  const int world = comm.size();
  std::vector<char> all;  // on rank 0: every rank's stream blocks, in rank order
  std::int64_t epoch = 0, position = 0;
  failing_alike(comm, op, comm.is_root(), [&] {
    const TensorMap members = load_npz_map(path);
    const std::int64_t total = check_mappable(members, path, world, op);
    if (total != streams.streams)
      fail<ValueError>(op, "'", path.string(), "' holds ", total, " streams but the StreamState has ", streams.streams);
    if (streams.sampler) {
      const std::int64_t size = extra_scalar(members, kSamplerSize, streams.sampler->dataset_size());
      if (size != streams.sampler->dataset_size())
        fail<ValueError>(op, "'", path.string(), "' holds a sampler over ", size, " examples but this one has ",
                         streams.sampler->dataset_size());
    }
    check_stream_counts(streams, mine, world, op);
    check_stream_rng(members, streams, path, op);
    // Placeholders over all streams, filled by the load, then cut into the ranks' blocks.
    const std::vector<std::int64_t> axes = stream_axes(streams);
    std::vector<Shared> whole;
    for (std::size_t k = 0; k < mine.size(); ++k)
      whole.emplace_back(zeros(whole_shape(mine[k], axes[k], total), mine[k].dtype()), "whole");
    const std::vector<Shared> sampler = sampler_members(streams.sampler);
    TrainingState job = whole_streams_job(state, streams, world, whole, sampler);
    recur::load_checkpoint(path, job);
    state.step = job.step;
    if (streams.sampler) epoch = sampler[1].value().item<std::int64_t>(), position = sampler[2].value().item<std::int64_t>();
    std::vector<Tensor> blocks;
    const std::int64_t share = total / world;
    for (int r = 0; r < world; ++r)
      for (std::size_t k = 0; k < whole.size(); ++k) blocks.push_back(slice(whole[k].value(), axes[k], r * share, (r + 1) * share));
    all = detail::pack(blocks);
  });
  broadcast(comm, state.parameters);
  broadcast(comm, state.optimizer_state);
  broadcast(comm, state.extra);
  broadcast_scalars(comm, state, epoch, position, op);
  std::vector<char> bytes(detail::total_bytes(mine));
  detail::scatter_bytes(comm, all, bytes, op);
  std::size_t offset = 0;
  const std::vector<Tensor> received = detail::unpack(mine, bytes.data(), offset);
  for (std::size_t k = 0; k < streams.variables.size(); ++k) Shared(streams.variables[k].value).assign(received[k]);
  for (std::size_t g = 0; g < streams.generators.size(); ++g) {
    const Tensor& states = received[streams.variables.size() + g];
    for (std::size_t s = 0; s < streams.generators[g].per_stream.size(); ++s)
      streams.generators[g].per_stream[s]->set_state(index(states, 0, static_cast<std::int64_t>(s)));
  }
  if (streams.sampler) {
    streams.sampler->set_epoch(epoch);
    streams.sampler->set_position(position);
  }
}
}  // namespace recur::distributed
