#include <recur/core/parallel.hpp>

#include <algorithm>
#include <thread>
#include <vector>

#include <recur/core/blas.hpp>
#include <recur/core/tile_team.hpp>

namespace recur::parallel {

int max_threads() { return std::max(1, blas::num_threads()); }

void for_each_task(std::int64_t tasks, int threads, const std::function<void(std::int64_t)>& task) {
  const std::int64_t workers = std::clamp<std::int64_t>(threads, 1, std::max<std::int64_t>(tasks, 1));
  // Worker w runs tasks w, w + workers, ...: a fixed assignment, so results never depend on
  // timing.
  auto run = [&](std::int64_t w) {
    for (std::int64_t k = w; k < tasks; k += workers) task(k);
  };
  if (workers > 1) detail::park_helpers();  // the tile team's spinning helpers would share cores with these
  std::vector<std::jthread> helpers;
  helpers.reserve(static_cast<std::size_t>(workers - 1));
  for (std::int64_t w = 1; w < workers; ++w) helpers.emplace_back(run, w);
  run(0);
}

}  // namespace recur::parallel
