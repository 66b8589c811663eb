#pragma once
// Communicator: the group of processes (ranks) of a data-parallel job, over MPI. It starts
// MPI when nothing has (and finalizes it at the end), or wraps a communicator the program
// already has. Every MPI call of recur::distributed goes through one, with MPI's errors
// turned into exceptions (CommunicationError) instead of MPI's default abort.
//
// A rank that fails must not leave the others waiting forever in a collective: run the
// training under abort_on_exception (the job ends with that rank's message), and waits on
// other ranks give up after `timeout` with TimeoutError.
#include <chrono>
#include <string_view>

#include <mpi.h>

#include <recur/core/error.hpp>
#include <recur/core/non_copyable.hpp>

namespace recur::distributed {

struct CommunicationError : Error { using Error::Error; };  // MPI reported an error
struct TimeoutError : Error { using Error::Error; };        // other ranks did not answer in time

struct CommunicatorOptions {
  // How long a wait on other ranks (an all-reduce, a gather) may take before TimeoutError.
  std::chrono::milliseconds timeout{std::chrono::minutes(5)};
};

class Communicator : NonCopyable {
 public:
  // MPI_COMM_WORLD, initializing MPI (MPI_Init_thread, serialized calls) unless the program
  // already did; then the destructor finalizes it.
  explicit Communicator(CommunicatorOptions options = {});
  // Wraps `comm` (not owned; MPI must be initialized): a sub-group, or a program's own world.
  explicit Communicator(MPI_Comm comm, CommunicatorOptions options = {});
  ~Communicator();

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool is_root() const { return rank_ == 0; }
  MPI_Comm handle() const { return comm_; }
  std::chrono::milliseconds timeout() const { return options_.timeout; }

  // Waits until every rank is here (TimeoutError after timeout()).
  void barrier() const;
  // Completes `request`, polling MPI (which moves the communication on) until it is done;
  // TimeoutError naming `what` after timeout().
  void wait(MPI_Request& request, std::string_view what) const;
  // Prints "recur::distributed: rank r of p: <why>" on stderr and ends the whole job.
  [[noreturn]] void abort(std::string_view why) const;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  CommunicatorOptions options_;
  int rank_ = 0, size_ = 1;
  bool owns_mpi_ = false;
};

// Throws CommunicationError naming `op` and MPI's message unless `code` is MPI_SUCCESS.
void check_mpi(int code, std::string_view op);

// Runs f(); if it throws, aborts the job with the exception's message (so the other ranks
// stop instead of waiting for this one). Returns what f returns.
template <class F>
decltype(auto) abort_on_exception(const Communicator& comm, F&& f) {
  try {
    return f();
  } catch (const std::exception& e) {
    comm.abort(e.what());
  } catch (...) {
    comm.abort("unknown exception");
  }
}

}  // namespace recur::distributed
