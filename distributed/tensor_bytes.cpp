#include <recur/distributed/tensor_bytes_detail.hpp>

#include <climits>
#include <cstring>

namespace recur::distributed::detail {

std::size_t total_bytes(const std::vector<Tensor>& values) {
  std::size_t bytes = 0;
  for (const Tensor& t : values) bytes += t.nbytes();
  return bytes;
}

std::vector<char> pack(const std::vector<Tensor>& values) {
  std::vector<char> bytes(total_bytes(values));
  std::size_t at = 0;
  for (const Tensor& t : values) {
    if (t.nbytes() > 0) std::memcpy(bytes.data() + at, t.raw_data(), t.nbytes());
    at += t.nbytes();
  }
  return bytes;
}

std::vector<Tensor> unpack(const std::vector<Tensor>& like, const char* bytes, std::size_t& offset) {
  std::vector<Tensor> out;
  for (const Tensor& t : like) {
    Tensor v = Tensor::empty(t.shape(), t.dtype());
    if (v.nbytes() > 0) std::memcpy(v.raw_data(), bytes + offset, v.nbytes());
    offset += v.nbytes();
    out.push_back(std::move(v));
  }
  return out;
}

std::vector<std::int64_t> layout_of(const std::vector<Tensor>& values) {
  std::vector<std::int64_t> layout{static_cast<std::int64_t>(values.size())};
  for (const Tensor& t : values) {
    layout.push_back(static_cast<std::int64_t>(t.dtype()));
    layout.push_back(t.rank());
    for (std::int64_t d : t.shape()) layout.push_back(d);
  }
  return layout;
}

namespace {
int mpi_count(std::size_t n, std::string_view op) {
  if (n > static_cast<std::size_t>(INT_MAX)) fail<ValueError>(op, n, " bytes are more than one MPI message holds");
  return static_cast<int>(n);
}

// A blocking collective with the communicator's timeout: start(&request) starts the
// nonblocking form, then it is waited on.
template <class Start>
void complete(const Communicator& comm, std::string_view op, Start&& start) {
  MPI_Request request;
  check_mpi(start(&request), op);
  comm.wait(request, op);
}
}  // namespace

void broadcast_bytes(const Communicator& comm, std::vector<char>& bytes, std::string_view op, int root) {
  std::int64_t size = static_cast<std::int64_t>(bytes.size());
  complete(comm, op, [&](MPI_Request* r) { return MPI_Ibcast(&size, 1, MPI_INT64_T, root, comm.handle(), r); });
  bytes.resize(static_cast<std::size_t>(size));
  const int count = mpi_count(bytes.size(), op);
  complete(comm, op, [&](MPI_Request* r) { return MPI_Ibcast(bytes.data(), count, MPI_BYTE, root, comm.handle(), r); });
}

void gather_bytes(const Communicator& comm, const std::vector<char>& mine, std::vector<char>& all, std::string_view op) {
  const int count = mpi_count(mine.size(), op);
  complete(comm, op, [&](MPI_Request* r) {
    return MPI_Igather(mine.data(), count, MPI_BYTE, all.data(), count, MPI_BYTE, 0, comm.handle(), r);
  });
}

void scatter_bytes(const Communicator& comm, const std::vector<char>& all, std::vector<char>& mine, std::string_view op) {
  const int count = mpi_count(mine.size(), op);
  complete(comm, op, [&](MPI_Request* r) {
    return MPI_Iscatter(all.data(), count, MPI_BYTE, mine.data(), count, MPI_BYTE, 0, comm.handle(), r);
  });
}

std::optional<std::string> first_failure(const Communicator& comm, std::string_view op, bool ok, const std::string& message) {
  int first_failing = ok ? INT_MAX : comm.rank();
  complete(comm, op, [&](MPI_Request* r) {
    return MPI_Iallreduce(MPI_IN_PLACE, &first_failing, 1, MPI_INT, MPI_MIN, comm.handle(), r);
  });
  if (first_failing == INT_MAX) return std::nullopt;
  std::vector<char> text(message.begin(), message.end());  // the failing rank's, sent to everyone
  broadcast_bytes(comm, text, op, first_failing);
  return recur::detail::concat("rank ", first_failing, ": ", std::string_view(text.data(), text.size()));
}

void check_same_layout(const Communicator& comm, std::string_view op, const std::vector<std::int64_t>& layout,
                       std::string_view what) {
  std::vector<char> root(reinterpret_cast<const char*>(layout.data()),
                         reinterpret_cast<const char*>(layout.data() + layout.size()));
  broadcast_bytes(comm, root, op);
  const bool same = root.size() == layout.size() * sizeof(std::int64_t) &&
                    std::memcmp(root.data(), layout.data(), root.size()) == 0;
  if (auto failure = first_failure(comm, op, same, recur::detail::concat("its ", what, " differ from rank 0's in number, dtype or shape")))
    fail<ValueError>(op, *failure);
}

}  // namespace recur::distributed::detail
