// main() of the MPI test binary: GoogleTest on every rank of one communicator; the job
// fails when a test fails on any rank. Waits on other ranks time out after 60 s, so a test
// that fails on one rank only ends in a TimeoutError rather than a hang.
#include <gtest/gtest.h>

#include "world.hpp"

namespace recur::distributed::testing {
namespace {
Communicator* world_ = nullptr;
}
const Communicator& world() { return *world_; }
}  // namespace recur::distributed::testing

int main(int argc, char** argv) {
  recur::distributed::Communicator comm({.timeout = std::chrono::seconds(60)});
  recur::distributed::testing::world_ = &comm;
  ::testing::InitGoogleTest(&argc, argv);
  int failed = RUN_ALL_TESTS() != 0;
  MPI_Allreduce(MPI_IN_PLACE, &failed, 1, MPI_INT, MPI_MAX, comm.handle());
  return failed;
}
