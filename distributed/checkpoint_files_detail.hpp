#pragma once
// Internal to distributed/checkpoint_*.cpp: what the two forms of a data-parallel checkpoint
// (distributed/checkpoint.hpp) share: the file's member names, failing alike on every rank,
// and the checks of what wrote a file.
#include <cstring>
#include <filesystem>
#include <string>
#include <string_view>

#include <recur/core/creation.hpp>
#include <recur/core/npz.hpp>
#include <recur/distributed/broadcast.hpp>
#include <recur/distributed/tensor_bytes_detail.hpp>
#include <recur/ops/indexing.hpp>
#include <recur/ops/join.hpp>
#include <recur/distributed/checkpoint.hpp>

namespace recur::distributed::checkpoint_detail {

inline constexpr const char* kWorldSize = "distributed.world_size";
inline constexpr const char* kStreams = "distributed.streams";
inline constexpr const char* kStream = "distributed.stream/";
inline constexpr const char* kStreamRng = "distributed.stream_rng/";
inline constexpr const char* kSamplerSize = "distributed.sampler.dataset_size";
inline constexpr const char* kSamplerEpoch = "distributed.sampler.epoch";
inline constexpr const char* kSamplerPosition = "distributed.sampler.position";

inline Shared int64_shared(std::int64_t v, const char* name) { return Shared(scalar(static_cast<double>(v), DType::int64), name); }

// The exception types a failure keeps when it is thrown on every rank; any other
// recur::Error becomes a ValueError. Kind 0 is no failure, kind k the k-th type.
template <class... Types>
struct Kinds {
  static int of(const Error& e) {
    int kind = 0, k = 0;
    ((++k, kind = kind == 0 && dynamic_cast<const Types*>(&e) ? k : kind), ...);
    return kind == 0 ? static_cast<int>(sizeof...(Types)) + 1 : kind;
  }
  [[noreturn]] static void raise(int kind, const std::string& what) {
    int k = 0;
    ((++k == kind ? throw Types(what) : void()), ...);
    throw ValueError(what);
  }
};
using Kept = Kinds<IOError, ShapeError, DTypeError, AxisError, MemoryError, ResizeError>;

// Runs `work` where `here` holds; if it throws a recur::Error (or runs out of memory) on any
// rank, every rank throws the same type with the lowest failing rank's message.
template <class Work>
void failing_alike(const Communicator& comm, std::string_view op, bool here, Work&& work) {
  int kind = 0;
  std::string message;
  if (here) {
    try {
      work();
    } catch (const Error& e) {
      kind = Kept::of(e), message = e.what();
    } catch (const std::exception& e) {  // memory running out in a container: still every rank
      kind = Kept::of(MemoryError("")), message = ::recur::detail::concat("recur::", op, ": out of memory (", e.what(), ")");
    }
  }
  const auto failure = detail::first_failure(comm, op, kind == 0, std::to_string(kind) + ":" + message);
  if (!failure) return;
  // "rank k: <kind>:<message>"
  const std::size_t start = failure->find(": ") + 2, colon = failure->find(':', start);
  Kept::raise(std::stoi(failure->substr(start, colon - start)), failure->substr(colon + 1));
}

inline std::int64_t saved_world(const TensorMap& members, const std::filesystem::path& path, std::string_view op) {
  const auto world = members.find(std::string("extra/") + kWorldSize);
  if (world == members.end())
    fail<ValueError>(op, "'", path.string(), "' was not written by distributed::save_checkpoint (no member 'extra/",
                     kWorldSize, "')");
  return world->second.item<std::int64_t>();
}

inline bool has_streams(const TensorMap& members) { return members.contains(std::string("extra/") + kStreams); }

inline std::string ranks(std::int64_t n) { return std::to_string(n) + (n == 1 ? " rank" : " ranks"); }

}  // namespace recur::distributed::checkpoint_detail
