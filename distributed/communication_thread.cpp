#include <recur/distributed/communication_thread.hpp>

#include <chrono>

namespace recur::distributed {

CommunicationThread::CommunicationThread(const Communicator& comm) : comm_(comm) {
  int level = MPI_THREAD_SINGLE;
  check_mpi(MPI_Query_thread(&level), "CommunicationThread");
  if (level < MPI_THREAD_SERIALIZED)
    fail<ValueError>("CommunicationThread", "MPI was initialized without MPI_THREAD_SERIALIZED (level ", level,
                     "); let Communicator() initialize it, or use polling");
  thread_ = std::thread([this] { run(); });
}

CommunicationThread::~CommunicationThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_all();
  thread_.join();
}

void CommunicationThread::submit(std::function<int(MPI_Request*)> start) {
  {
    std::lock_guard lock(mutex_);
    queue_.push_back(std::move(start));
    ++submitted_;
  }
  work_.notify_all();
}

void CommunicationThread::wait_all(std::string_view what) {
  std::unique_lock lock(mutex_);
  const bool finished = done_.wait_for(lock, comm_.timeout(), [&] { return completed_ == submitted_ || error_; });
  if (error_) std::rethrow_exception(error_);
  if (!finished)
    fail<TimeoutError>(what, "rank ", comm_.rank(), " of ", comm_.size(), " waited ", comm_.timeout().count(),
                       " ms for the other ranks (one of them failed, hangs or is far behind)");
}

void CommunicationThread::run() {
  std::vector<MPI_Request> in_flight;  // started, in order; the oldest first
  for (;;) {
    std::function<int(MPI_Request*)> start;
    {
      std::unique_lock lock(mutex_);
      // Idle (nothing queued, nothing in flight): sleep without touching MPI.
      work_.wait(lock, [&] { return stop_ || !queue_.empty() || !in_flight.empty(); });
      // Stopping: whatever is still in flight is given up (after an error the job ends).
      if (stop_) return;
      if (!queue_.empty()) {
        start = std::move(queue_.front());
        queue_.pop_front();
      }
    }
    try {
      if (start) {
        in_flight.push_back(MPI_REQUEST_NULL);
        check_mpi(start(&in_flight.back()), "CommunicationThread");
      }
      std::size_t finished = 0;
      while (finished < in_flight.size()) {  // testing the oldest moves them all on
        int done = 0;
        check_mpi(MPI_Test(&in_flight[finished], &done, MPI_STATUS_IGNORE), "CommunicationThread");
        if (!done) break;
        ++finished;
      }
      in_flight.erase(in_flight.begin(), in_flight.begin() + static_cast<std::ptrdiff_t>(finished));
      if (finished > 0) {
        std::lock_guard lock(mutex_);
        completed_ += finished;
      }
      if (finished > 0) done_.notify_all();
      if (!start && finished == 0) std::this_thread::sleep_for(std::chrono::microseconds(20));
    } catch (...) {
      std::lock_guard lock(mutex_);
      error_ = std::current_exception();
      done_.notify_all();
      return;
    }
  }
}

}  // namespace recur::distributed
