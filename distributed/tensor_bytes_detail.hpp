#pragma once
// Tensors as one byte buffer, for the collectives that move many variables at once
// (broadcast, checkpoint gather and scatter), and the checks that every rank holds the
// same layout. Internal to recur::distributed.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <recur/autodiff/module.hpp>
#include <recur/distributed/communicator.hpp>

namespace recur::distributed::detail {

// The values' bytes, one after another.
std::vector<char> pack(const std::vector<Tensor>& values);
// The tensors of `like`'s shapes and dtypes, read from `bytes` at `offset` (advanced).
std::vector<Tensor> unpack(const std::vector<Tensor>& like, const char* bytes, std::size_t& offset);
std::size_t total_bytes(const std::vector<Tensor>& values);

// A number per variable (its dtype and shape) that differs when the layouts differ.
std::vector<std::int64_t> layout_of(const std::vector<Tensor>& values);

// Checks that every rank's `layout` equals the root's; on every rank, ValueError naming
// `op` and what differs (each rank reports whether its own or another rank's differs).
void check_same_layout(const Communicator& comm, std::string_view op, const std::vector<std::int64_t>& layout,
                       std::string_view what);

// Broadcasts `bytes` (resized on the receivers to the root's size) from `root`.
void broadcast_bytes(const Communicator& comm, std::vector<char>& bytes, std::string_view op, int root = 0);

// Every rank's `mine` (all of one size) into `all` on rank 0, in rank order; and back:
// rank r's part of rank 0's `all` into `mine`.
void gather_bytes(const Communicator& comm, const std::vector<char>& mine, std::vector<char>& all, std::string_view op);
void scatter_bytes(const Communicator& comm, const std::vector<char>& all, std::vector<char>& mine, std::string_view op);

// The ranks agree on whether `ok` held everywhere: nothing when it did, else on every rank
// "rank k: <message>" of the lowest failing rank k (for each rank to throw the same error).
std::optional<std::string> first_failure(const Communicator& comm, std::string_view op, bool ok,
                                         const std::string& message);

}  // namespace recur::distributed::detail
