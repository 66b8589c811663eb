#pragma once
// GradientReducer: averages the parameters' gradients over the ranks after each backward,
// as PyTorch's DistributedDataParallel does. The parameters are grouped into buckets of
// contiguous memory (bucket_plan.hpp); as soon as backward has delivered the last gradient
// of every parameter in a bucket (BackwardObserver), that bucket's MPI_Iallreduce starts
// while the rest of backward runs, and the pass polls MPI between nodes so the reduction
// moves on (Open MPI has no progress thread). Buckets start in a fixed order on every rank
// and each is one all-reduce of fixed size, so a run gives the same result every time.
//
// Use: make it after broadcasting the parameters from rank 0, on the thread that runs
// backward (while it lives it observes that thread's backward passes; reducers nest like
// scopes), and call finish() after each backward, before clipping and the optimizer step:
//
//   distributed::GradientReducer reducer(comm, model.parameters());
//   ... tape.backward(loss);         // buckets start during the pass
//   reducer.finish();                // every gradient is now the mean over the ranks
//   optim::clip_grad_norm(model.parameters(), 1.0);   // the same norm on every rank
//   adam.step();
//
// After finish() every parameter has a gradient (zeros where no rank produced one). A
// second backward reaching a parameter before finish() is an error (ValueError): the
// bucket holding it may already be on its way. Buckets started by a backward that then
// threw are still in flight on every rank: call finish() (or end the job, as
// abort_on_exception does) before the next step.
#include <chrono>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include <recur/autodiff/backward_observer.hpp>
#include <recur/autodiff/module.hpp>
#include <recur/distributed/bucket_plan.hpp>
#include <recur/distributed/communication_thread.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed {

// Who moves the all-reduces on while backward runs.
enum class Progress {
  poll,    // backward polls MPI between nodes (BackwardObserver::between_nodes)
  thread,  // a CommunicationThread starts and polls them; backward makes no MPI call
};

struct ReducerOptions {
  std::size_t bucket_bytes = std::size_t{1} << 20;  // cap on one bucket's bytes
  // Start each bucket's all-reduce during backward, when it is ready (false: all of them
  // in finish(), after backward; to measure what the overlap is worth).
  bool overlap = true;
  Progress progress = Progress::poll;
};

// What the last finish() cost, for benches and logs.
struct ReducerStats {
  std::size_t bytes = 0;                    // gradient bytes all-reduced per rank per step
  std::size_t buckets = 0;
  std::size_t started_during_backward = 0;  // buckets started before finish()
  double finish_seconds = 0;                // time finish() waited (communication not hidden)
};

class GradientReducer final : public BackwardObserver, NonCopyable {
 public:
  GradientReducer(const Communicator& comm, std::vector<Shared> parameters, ReducerOptions options = {});

  // Starts the buckets not started yet, waits for all (TimeoutError after the
  // communicator's timeout) and sets every gradient to the mean over the ranks.
  void finish();
  const ReducerStats& stats() const { return stats_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }

  void gradient_final(const Shared& shared) override;
  void between_nodes() override;

 private:
  struct BucketState {
    Tensor buffer;
    std::size_t waiting = 0;  // parameters whose gradients are not in the buffer yet
    MPI_Request request = MPI_REQUEST_NULL;
    bool started = false;
  };
  void copy_in(std::size_t parameter);
  void start_ready_buckets();
  void start(std::size_t bucket);
  void reset();

  const Communicator& comm_;
  std::vector<Shared> parameters_;
  ReducerOptions options_;
  std::vector<Bucket> buckets_;
  std::vector<BucketState> states_;
  std::vector<std::size_t> bucket_of_, slot_of_;          // parameter -> its bucket and slot
  std::vector<std::uint8_t> copied_;                      // parameter -> gradient in its bucket
  std::unordered_map<const void*, std::size_t> index_of_;  // Shared identity -> parameter
  std::unique_ptr<CommunicationThread> thread_;  // with Progress::thread
  std::size_t next_to_start_ = 0;
  std::size_t polled_ = 0;  // the first started bucket not known to be complete
  ReducerStats stats_;
  ObserveBackward observing_;
};

}  // namespace recur::distributed
