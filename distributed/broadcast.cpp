#include <recur/distributed/broadcast.hpp>

#include <recur/distributed/tensor_bytes_detail.hpp>

namespace recur::distributed {

void broadcast(const Communicator& comm, const std::vector<Shared>& variables) {
  std::vector<Tensor> values;
  for (std::size_t k = 0; k < variables.size(); ++k) {
    if (!variables[k].defined()) fail<ValueError>("broadcast", "variable ", k, " is a null Shared");
    values.push_back(variables[k].value());
  }
  detail::check_same_layout(comm, "broadcast", detail::layout_of(values), "variables");
  std::vector<char> bytes = comm.is_root() ? detail::pack(values) : std::vector<char>();
  detail::broadcast_bytes(comm, bytes, "broadcast");
  if (comm.is_root()) return;
  std::size_t offset = 0;
  const std::vector<Tensor> received = detail::unpack(values, bytes.data(), offset);
  for (std::size_t k = 0; k < variables.size(); ++k) Shared(variables[k]).assign(received[k]);
}

void broadcast(const Communicator& comm, const NamedShared& variables) {
  std::vector<Shared> shared;
  for (const auto& [name, s] : variables) shared.push_back(s);
  broadcast(comm, shared);
}

void broadcast_parameters(const Communicator& comm, const Module& module) { broadcast(comm, module.named_parameters()); }

void broadcast_state(const Communicator& comm, const optim::Optimizer& optimizer) {
  broadcast(comm, optimizer.named_state());
}

}  // namespace recur::distributed
