#pragma once
// The communicator of the MPI test binary (made in mpi_main.cpp), and helpers to compare
// values across ranks.
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

}  // namespace recur::distributed::testing
