#include <recur/distributed/communicator.hpp>

#include <cstdio>
#include <string>
#include <thread>

namespace recur::distributed {

void check_mpi(int code, std::string_view op) {
  if (code == MPI_SUCCESS) return;
  char message[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, message, &length);
  fail<CommunicationError>(op, "MPI error ", code, ": ", std::string_view(message, static_cast<std::size_t>(length)));
}

Communicator::Communicator(CommunicatorOptions options) : options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_SERIALIZED, &provided), "Communicator");
    owns_mpi_ = true;
  }
  comm_ = MPI_COMM_WORLD;
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "Communicator");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "Communicator");
  check_mpi(MPI_Comm_size(comm_, &size_), "Communicator");
}

Communicator::Communicator(MPI_Comm comm, CommunicatorOptions options) : comm_(comm), options_(options) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) fail<ValueError>("Communicator", "MPI is not initialized; use Communicator() to start it");
  if (comm == MPI_COMM_NULL) fail<ValueError>("Communicator", "the communicator is MPI_COMM_NULL");
  check_mpi(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "Communicator");
  check_mpi(MPI_Comm_rank(comm_, &rank_), "Communicator");
  check_mpi(MPI_Comm_size(comm_, &size_), "Communicator");
}

Communicator::~Communicator() {
  if (!owns_mpi_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void Communicator::wait(MPI_Request& request, std::string_view what) const {
  const auto deadline = std::chrono::steady_clock::now() + options_.timeout;
  for (;;) {
    int done = 0;
    check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), what);
    if (done) return;
    if (std::chrono::steady_clock::now() > deadline)
      fail<TimeoutError>(what, "rank ", rank_, " of ", size_, " waited ", options_.timeout.count(),
                         " ms for the other ranks (one of them failed, hangs or is far behind)");
    std::this_thread::yield();
  }
}

void Communicator::barrier() const {
  MPI_Request request;
  check_mpi(MPI_Ibarrier(comm_, &request), "barrier");
  wait(request, "barrier");
}

void Communicator::abort(std::string_view why) const {
  std::fprintf(stderr, "recur::distributed: rank %d of %d: %.*s; aborting the job\n", rank_, size_,
               static_cast<int>(why.size()), why.data());
  std::fflush(stderr);
  MPI_Abort(comm_, 1);
  std::abort();  // MPI_Abort does not return; this only tells the compiler so
}

}  // namespace recur::distributed
