#include <recur/distributed/checkpoint.hpp>

#include <cstring>
#include <deque>
#include <string>

#include <recur/core/creation.hpp>
#include <recur/core/npz.hpp>
#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/tensor_bytes_detail.hpp>

namespace recur::distributed {
namespace {

constexpr const char* kWorldSize = "distributed.world_size";

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
  job.state.extra.emplace_back(kWorldSize, Shared(scalar(static_cast<double>(world), DType::int64), kWorldSize));
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

// Runs `work` on rank 0; if it throws a recur::Error (or runs out of memory), every rank
// throws the same type with rank 0's message.
template <class Work>
void on_root_everywhere_failing(const Communicator& comm, std::string_view op, Work&& work) {
  int kind = 0;  // 0: fine; else which exception
  std::string message;
  if (comm.is_root()) {
    try {
      work();
    } catch (const IOError& e) {
      kind = 1, message = e.what();
    } catch (const ShapeError& e) {
      kind = 2, message = e.what();
    } catch (const DTypeError& e) {
      kind = 3, message = e.what();
    } catch (const MemoryError& e) {
      kind = 5, message = e.what();
    } catch (const Error& e) {
      kind = 4, message = e.what();
    } catch (const std::exception& e) {  // memory running out in a container: still every rank
      kind = 5, message = ::recur::detail::concat("recur::", op, ": out of memory (", e.what(), ")");
    }
  }
  const auto failure = detail::first_failure(comm, op, kind == 0, std::to_string(kind) + ":" + message);
  if (!failure) return;
  // "rank 0: <kind>:<message>"
  const std::size_t colon = failure->find(':', 8);
  const std::string what = failure->substr(colon + 1);
  switch (std::stoi(failure->substr(8, colon - 8))) {
    case 1: throw IOError(what);
    case 2: throw ShapeError(what);
    case 3: throw DTypeError(what);
    case 5: throw MemoryError(what);
    default: throw ValueError(what);
  }
}

}  // namespace

void save_checkpoint(const Communicator& comm, const std::filesystem::path& path, const TrainingState& state) {
  const std::vector<Tensor> mine = rank_values(state, "distributed::save_checkpoint");
  detail::check_same_layout(comm, "distributed::save_checkpoint", detail::layout_of(mine), "extra members and generators");
  const std::vector<char> bytes = detail::pack(mine);
  std::vector<char> all(comm.is_root() ? bytes.size() * static_cast<std::size_t>(comm.size()) : 0);
  detail::gather_bytes(comm, bytes, all, "distributed::save_checkpoint");
  on_root_everywhere_failing(comm, "distributed::save_checkpoint", [&] {
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
  on_root_everywhere_failing(comm, op, [&] {
    const TensorMap members = load_npz_map(path);
    const auto world = members.find(std::string("extra/") + kWorldSize);
    if (world == members.end())
      fail<ValueError>(op, "'", path.string(), "' was not written by distributed::save_checkpoint (no member 'extra/",
                       kWorldSize, "')");
    const auto saved_world = world->second.item<std::int64_t>();
    if (saved_world != comm.size())
      fail<ValueError>(op, "'", path.string(), "' was written by ", saved_world, " ranks but this job has ", comm.size(),
                       "; each rank's carried streams and random state are in it, so resume on ", saved_world, " ranks");
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
