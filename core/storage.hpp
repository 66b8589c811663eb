#pragma once
// Reference-counted element buffers. Buffers come from a per-thread pool of size classes,
// so a training loop in steady state reuses the buffers of the previous step instead of
// calling the system allocator for every temporary.
#include <atomic>
#include <cstddef>
#include <cstdint>

#include <boost/intrusive_ptr.hpp>

namespace recur {

class Storage {
 public:
  // A buffer of at least `bytes` bytes, 64-byte aligned, from the calling thread's pool.
  static boost::intrusive_ptr<Storage> allocate(std::size_t bytes);
  // Wraps memory owned elsewhere; `release(context)` runs when the last reference goes.
  static boost::intrusive_ptr<Storage> adopt(void* data, std::size_t bytes, void* context,
                                             void (*release)(void* context));

  void* data() const { return data_; }
  std::size_t bytes() const { return bytes_; }
  bool unique() const { return refs_.load(std::memory_order_acquire) == 1; }

  friend void intrusive_ptr_add_ref(Storage* s) { s->refs_.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(Storage* s) {
    if (s->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) s->destroy();
  }

 private:
  Storage() = default;
  void destroy();

  std::atomic<std::int32_t> refs_{0};
  std::int32_t size_class_ = -1;  // -1: adopted memory, not from the pool
  std::size_t bytes_ = 0;
  void* data_ = nullptr;
  void* context_ = nullptr;
  void (*release_)(void*) = nullptr;
};

using StoragePtr = boost::intrusive_ptr<Storage>;

namespace memory {
struct PoolStats {
  std::uint64_t system_allocations = 0;  // buffers obtained from the system allocator
  std::uint64_t pool_hits = 0;           // buffers served from the pool
  std::size_t cached_bytes = 0;          // bytes held in this thread's pool, free for reuse
};
// Counters of the calling thread's pool.
PoolStats pool_stats();
// Returns the calling thread's cached buffers to the system.
void trim_pool();
// The memory the system can still give without swapping (Linux's MemAvailable); the
// largest uint64 where that is not known. Large buffers are checked against it first:
// Linux overcommits, so a request past it would succeed and the process be killed later.
std::uint64_t available_bytes();
}  // namespace memory

}  // namespace recur
