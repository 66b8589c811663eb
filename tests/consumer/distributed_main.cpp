// Checks that an installed recur::distributed links and reduces: on p ranks (mpirun), the
// gradient of sum(w * (rank + 1)) averaged over the ranks is (p + 1) / 2.
#include <recur/recur.hpp>
#include <recur/distributed/gradient_reducer.hpp>

#include <iostream>

int main() {
  recur::distributed::Communicator comm;
  recur::Shared w(recur::ones({3}, recur::DType::float64), "w");
  recur::distributed::GradientReducer reducer(comm, {w});
  {
    recur::Tape tape;
    tape.backward(recur::sum(recur::Var(w) * (comm.rank() + 1.0)));
  }
  reducer.finish();
  const double expected = (comm.size() + 1) / 2.0;
  if (w.grad().at({0}) != expected) {
    std::cerr << "consumer: rank " << comm.rank() << ": mean gradient " << w.grad().at({0}) << ", expected " << expected
              << "\n";
    return 1;
  }
  if (comm.is_root())
    std::cout << "consumer: find_package(recur) gives recur::distributed; " << comm.size()
              << " ranks averaged their gradients\n";
  return 0;
}
