// The per-rank form of a data-parallel checkpoint (distributed/checkpoint.hpp): each rank's
// own members under "rank<r>/", resumed on the same number of ranks.
#include <recur/distributed/checkpoint.hpp>

#include <deque>

#include <recur/distributed/checkpoint_files_detail.hpp>

namespace recur::distributed {
namespace {

using namespace checkpoint_detail;

// This rank's own members, in a fixed order: the extras' values, then the generators' states.
std::vector<Tensor> rank_values(const TrainingState& state, std::string_view op) {
  std::vector<Tensor> values;
  for (const auto& [name, shared] : state.extra) {
    if (!shared.defined()) fail<ValueError>(op, "extra '", name, "' is a null Shared handle");
    values.push_back(shared.value());
  }
  for (const auto& [name, generator] : state.generators) {
    if (!generator) fail<ValueError>(op, "generator '", name, "' is a null pointer");
    values.push_back(generator->state());
  }
  return values;
}

// The state rank 0 saves or loads: its replicated members, the world size and every rank's
// own members under "rank<r>/" (rank 0's are its own variables; the others' live in `store`).
struct WholeJob {
  TrainingState state;
  std::deque<Generator> generators;  // stable addresses for state.generators
};

WholeJob whole_job(const TrainingState& mine, int world, const std::vector<std::vector<Tensor>>& others) {
  WholeJob job;
  job.state.parameters = mine.parameters;
  job.state.optimizer_state = mine.optimizer_state;
  job.state.step = mine.step;
  job.state.extra.emplace_back(kWorldSize, int64_shared(world, kWorldSize));
  for (int r = 0; r < world; ++r) {
    const std::string prefix = "rank" + std::to_string(r) + "/";
    std::size_t v = 0;
    for (const auto& [name, shared] : mine.extra) {
      const Shared s = r == 0 ? shared : Shared(others[static_cast<std::size_t>(r)][v], name);
      job.state.extra.emplace_back(prefix + name, s);
      ++v;
    }
    for (const auto& [name, generator] : mine.generators) {
      Generator* g = generator;
      if (r != 0) {
        g = &job.generators.emplace_back(0);
        g->set_state(others[static_cast<std::size_t>(r)][v]);
      }
      job.state.generators.emplace_back(prefix + name, g);
      ++v;
    }
  }
  return job;
}

// The file's "extra/distributed.world_size": ValueError when it has none.

}  // namespace

void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state) {
  const char* op = "distributed::save_checkpoint";
  const std::vector<Tensor> mine = rank_values(state, op);
  detail::check_same_layout(comm, op, detail::layout_of(mine), "extra members and generators");
  const std::vector<char> bytes = detail::pack(mine);
  std::vector<char> all(comm.is_root() ? bytes.size() * static_cast<std::size_t>(comm.size()) : 0);
  detail::gather_bytes(comm, bytes, all, op);
  failing_alike(comm, op, comm.is_root(), [&] {
    std::vector<std::vector<Tensor>> others(static_cast<std::size_t>(comm.size()));
    std::size_t offset = 0;
    for (auto& values : others) values = detail::unpack(mine, all.data(), offset);
    const WholeJob job = whole_job(state, comm.size(), others);
    recur::save_checkpoint(path, job.state);
  });
}

void load_checkpoint(const Communicator& comm, const std::filesystem::path& path, TrainingState& state) {
  const char* op = "distributed::load_checkpoint";
  const std::vector<Tensor> mine = rank_values(state, op);
  detail::check_same_layout(comm, op, detail::layout_of(mine), "extra members and generators");
  std::vector<char> all;
  failing_alike(comm, op, comm.is_root(), [&] {
    const TensorMap members = load_npz_map(path);
    const std::int64_t saved = saved_world(members, path, op);
    if (has_streams(members))
      fail<ValueError>(op, "'", path.string(), "' holds the job's state per stream (written with a StreamState): ",
                       "load it with a StreamState");
    if (saved != comm.size())
      fail<ResizeError>(op, "'", path.string(), "' was written by ", saved, " ranks but this job has ", comm.size(),
                        "; each rank's carried streams and random state are in it, so resume on ", saved,
                        " ranks (or save with a StreamState, which resumes on any number of ranks dividing the streams)");
    // Placeholders for the other ranks' members, filled by the load, then sent to them.
    std::vector<std::vector<Tensor>> others(static_cast<std::size_t>(comm.size()), mine);
    for (auto& values : others)
      for (Tensor& t : values) t = t.clone();
    WholeJob job = whole_job(state, comm.size(), others);
    recur::load_checkpoint(path, job.state);
    state.step = job.state.step;
    std::vector<Tensor> loaded;
    for (int r = 0; r < comm.size(); ++r) {
      const std::string prefix = "rank" + std::to_string(r) + "/";
      for (const auto& [name, shared] : job.state.extra)
        if (name.starts_with(prefix)) loaded.push_back(shared.value());
      for (const auto& [name, generator] : job.state.generators)
        if (name.starts_with(prefix)) loaded.push_back(generator->state());
    }
    all = detail::pack(loaded);
  });
  broadcast(comm, state.parameters);
  broadcast(comm, state.optimizer_state);
  std::vector<char> step(sizeof(std::int64_t));
  std::memcpy(step.data(), &state.step, sizeof state.step);
  detail::broadcast_bytes(comm, step, op);
  std::memcpy(&state.step, step.data(), sizeof state.step);
  std::vector<char> bytes(detail::total_bytes(mine));
  detail::scatter_bytes(comm, all, bytes, op);
  if (comm.is_root()) return;  // the load wrote rank 0's own members
  std::size_t offset = 0;
  const std::vector<Tensor> received = detail::unpack(mine, bytes.data(), offset);
  std::size_t v = 0;
  for (auto& [name, shared] : state.extra) Shared(shared).assign(received[v++]);
  for (auto& [name, generator] : state.generators) generator->set_state(received[v++]);
}

}  // namespace recur::distributed
