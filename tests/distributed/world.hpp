#pragma once
// The communicator of the MPI test binary (made in mpi_main.cpp), and helpers to compare
// values across ranks and to name a file they share.
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include <recur/recur.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed::testing {

const Communicator& world();

// Rank 0's copy of `value` on every rank.
inline double root_value(double value) {
  MPI_Bcast(&value, 1, MPI_DOUBLE, 0, world().handle());
  return value;
}

// A path every rank agrees on (rank 0's process id), in the temporary directory.
inline std::filesystem::path shared_path(const std::string& name) {
  const double id = root_value(static_cast<double>(::getpid()));
  return std::filesystem::temp_directory_path() / ("recur_distributed_" + std::to_string(static_cast<long>(id)) + "_" + name);
}

}  // namespace recur::distributed::testing
