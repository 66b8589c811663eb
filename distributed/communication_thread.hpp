#pragma once
// CommunicationThread: a thread that starts nonblocking collectives handed to it and polls
// them to completion, so that communication moves on while the calling thread computes
// without the computation having to poll (Open MPI has no progress thread of its own).
// The other choice is polling from backward (GradientReducer's default); ReducerOptions
// picks one.
//
// Only this thread calls MPI between submit() and the end of wait_all(); the caller makes
// no MPI call meanwhile, which MPI_THREAD_SERIALIZED allows (Communicator() asks for it).
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <string_view>
#include <thread>
#include <vector>

#include <recur/distributed/communicator.hpp>

namespace recur::distributed {

class CommunicationThread : NonCopyable {
 public:
  // ValueError unless MPI runs with at least MPI_THREAD_SERIALIZED.
  explicit CommunicationThread(const Communicator& comm);
  ~CommunicationThread();

  // start(&request) is called on the thread (it starts a collective and returns its MPI
  // code); the thread then polls the request until it completes. Calls start in order.
  void submit(std::function<int(MPI_Request*)> start);
  // Waits until everything submitted has completed: TimeoutError naming `what` after the
  // communicator's timeout; an MPI error on the thread is rethrown here.
  void wait_all(std::string_view what);

 private:
  void run();

  const Communicator& comm_;
  std::mutex mutex_;
  std::condition_variable work_, done_;
  std::deque<std::function<int(MPI_Request*)>> queue_;
  std::size_t submitted_ = 0, completed_ = 0;
  std::exception_ptr error_;
  bool stop_ = false;
  std::thread thread_;
};

}  // namespace recur::distributed
