#pragma once
// Rank 0's values to every rank, at the start of data-parallel training (so that every
// rank starts from the same parameters and optimizer state, as DDP's constructor does) and
// after a checkpoint is loaded on rank 0. Every rank must pass variables of the same
// number, dtypes and shapes in the same order: otherwise ValueError on every rank, naming
// the first rank whose variables differ, before anything changes.
#include <vector>

#include <recur/autodiff/module.hpp>
#include <recur/autodiff/optim/optimizer.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed {

void broadcast(const Communicator& comm, const std::vector<Shared>& variables);
void broadcast(const Communicator& comm, const NamedShared& variables);
void broadcast_parameters(const Communicator& comm, const Module& module);
// The optimizer's state (optim::Optimizer::named_state: moments, step counts, lr).
void broadcast_state(const Communicator& comm, const optim::Optimizer& optimizer);

}  // namespace recur::distributed
