#pragma once
// Runs independent tasks of one kernel on several threads. recur has one thread setting: the
// BLAS thread count (OPENBLAS_NUM_THREADS or blas::set_num_threads), so a benchmark that
// sets it sets recur's elementwise kernels too. Threads are started per call and joined
// before it returns: use it only for work of at least tens of microseconds.
#include <cstdint>
#include <functional>

namespace recur::parallel {

// How many threads a kernel may use (blas::num_threads(), at least 1).
int max_threads();

// Calls task(k) for every k in [0, tasks), on up to `threads` threads (the caller's among
// them); returns when all are done. Tasks must not throw.
void for_each_task(std::int64_t tasks, int threads, const std::function<void(std::int64_t)>& task);

}  // namespace recur::parallel
