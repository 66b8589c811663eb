#pragma once
// The char-LSTM demo's data parallelism (--mpi, under mpirun): each rank trains on its own
// block of the text's streams, gradients are averaged over the ranks after each backward
// (recur::distributed), rank 0 prints and writes the checkpoint. Without --mpi, or in a
// build without MPI, every call is the one-process behaviour.
#include <filesystem>
#include <memory>
#include <stdexcept>

#include <recur/recur.hpp>
#if RECUR_EXAMPLES_WITH_MPI
#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/checkpoint.hpp>
#include <recur/distributed/gradient_reducer.hpp>
#include <recur/distributed/sharding.hpp>
#endif

namespace examples {

class DataParallel {
 public:
  explicit DataParallel(bool enabled) {
    if (!enabled) return;
#if RECUR_EXAMPLES_WITH_MPI
    comm_ = std::make_unique<recur::distributed::Communicator>();
#else
    throw std::runtime_error("--mpi: this build has no recur::distributed (MPI was not found)");
#endif
  }

#if RECUR_EXAMPLES_WITH_MPI
  int rank() const { return comm_ ? comm_->rank() : 0; }
  int size() const { return comm_ ? comm_->size() : 1; }
#else
  int rank() const { return 0; }
  int size() const { return 1; }
#endif
  bool is_root() const { return rank() == 0; }

  // This rank's block of the streams ([time, streams]).
  recur::Tensor shard(const recur::Tensor& streams) const {
#if RECUR_EXAMPLES_WITH_MPI
    if (comm_) return recur::distributed::shard_streams(streams, 1, *comm_);
#endif
    return streams;
  }
  // Rank 0's parameters and optimizer state everywhere, and the gradient reducer.
  void start(const recur::Module& model, const recur::optim::Optimizer& optimizer) {
#if RECUR_EXAMPLES_WITH_MPI
    if (!comm_) return;
    recur::distributed::broadcast_parameters(*comm_, model);
    recur::distributed::broadcast_state(*comm_, optimizer);
    reducer_ = std::make_unique<recur::distributed::GradientReducer>(*comm_, model.parameters());
#else
    (void)model, (void)optimizer;
#endif
  }
  // After each backward: the gradients become the mean over the ranks.
  void average_gradients() {
#if RECUR_EXAMPLES_WITH_MPI
    if (reducer_) reducer_->finish();
#endif
  }
  void save(const std::filesystem::path& path, const recur::TrainingState& state) const {
#if RECUR_EXAMPLES_WITH_MPI
    if (comm_) return recur::distributed::save_checkpoint(*comm_, path, state);
#endif
    recur::save_checkpoint(path, state);
  }
  void load(const std::filesystem::path& path, recur::TrainingState& state) const {
#if RECUR_EXAMPLES_WITH_MPI
    if (comm_) return recur::distributed::load_checkpoint(*comm_, path, state);
#endif
    recur::load_checkpoint(path, state);
  }
  // Runs f(), ending the whole job if it throws on this rank (the others would wait).
  template <class F>
  int run(F&& f) const {
#if RECUR_EXAMPLES_WITH_MPI
    if (comm_) return recur::distributed::abort_on_exception(*comm_, f);
#endif
    return f();
  }

 private:
#if RECUR_EXAMPLES_WITH_MPI
  std::unique_ptr<recur::distributed::Communicator> comm_;
  std::unique_ptr<recur::distributed::GradientReducer> reducer_;
#endif
};

}  // namespace examples
