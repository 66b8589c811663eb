#include <recur/core/storage.hpp>

#include <bit>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <new>
#include <string>
#include <vector>

namespace recur {
namespace {

constexpr std::size_t kHeader = 64;  // Storage header, padded so data stays 64-byte aligned
constexpr int kClasses = 48;         // size classes 64 B << k
constexpr std::size_t kMaxCachedBytes = std::size_t{1} << 30;  // per thread

// The smallest k with 64 << k >= bytes (bytes >= 1): the bit length of (bytes - 1) / 64.
int size_class_for(std::size_t bytes) { return static_cast<int>(std::bit_width((bytes - 1) >> 6)); }

// Free blocks of one thread, one list per size class. A block freed on another thread
// joins that thread's pool: memory may migrate, but never leaks or is shared.
struct ThreadPool {
  std::vector<void*> free[kClasses];
  std::size_t cached = 0;
  std::uint64_t system_allocations = 0, hits = 0;

  ~ThreadPool();
  void release_all() {
    for (auto& list : free) {
      for (void* p : list) std::free(p);
      list.clear();
    }
    cached = 0;
  }
};

// Set once the thread's pool is gone; tensors destroyed later (statics, thread exit)
// go straight back to the system. A trivially destructible flag outlives the pool.
thread_local bool pool_dead = false;

ThreadPool::~ThreadPool() {
  release_all();
  pool_dead = true;
}

ThreadPool& pool() {
  thread_local ThreadPool p;
  return p;
}

static_assert(sizeof(Storage) <= kHeader);

// A large request is first checked against the memory the system has free, so that it
// fails as a MemoryError instead of the process being killed when it touches the pages (a
// hostile model's Expand to 20 GiB on a 16 GiB machine). Reading /proc costs microseconds;
// filling 64 MiB, far more.
constexpr std::size_t kCheckedBytes = std::size_t{64} << 20;

}  // namespace

StoragePtr Storage::allocate(std::size_t bytes) {
  if (bytes > (std::size_t{64} << (kClasses - 1))) throw std::bad_alloc();
  const int k = size_class_for(bytes == 0 ? 1 : bytes);
  const std::size_t block = std::size_t{64} << k;
  auto& p = pool();
  void* mem;
  if (!p.free[k].empty()) {
    mem = p.free[k].back();
    p.free[k].pop_back();
    p.cached -= block;
    ++p.hits;
  } else {
    if (block >= kCheckedBytes && block > memory::available_bytes()) throw std::bad_alloc();
    mem = std::aligned_alloc(64, kHeader + block);
    if (!mem) throw std::bad_alloc();
    ++p.system_allocations;
  }
  auto* s = new (mem) Storage();
  s->size_class_ = k;
  s->bytes_ = bytes;
  s->data_ = static_cast<char*>(mem) + kHeader;
  return StoragePtr(s);
}

StoragePtr Storage::adopt(void* data, std::size_t bytes, void* context, void (*release)(void*)) {
  auto* s = new Storage();
  s->bytes_ = bytes;
  s->data_ = data;
  s->context_ = context;
  s->release_ = release;
  return StoragePtr(s);
}

void Storage::destroy() {
  if (size_class_ < 0) {
    if (release_) release_(context_);
    delete this;
    return;
  }
  const int k = size_class_;
  const std::size_t block = std::size_t{64} << k;
  this->~Storage();
  if (pool_dead) {
    std::free(this);
    return;
  }
  auto& p = pool();
  if (p.cached + block > kMaxCachedBytes) {
    std::free(this);
    return;
  }
  // Freeing must not throw (it runs while a failed run is rolled back, often because memory
  // ran out): if the free list cannot grow, the block goes back to the system instead.
  try {
    p.free[k].push_back(this);
  } catch (const std::bad_alloc&) {
    std::free(this);
    return;
  }
  p.cached += block;
}

namespace memory {
PoolStats pool_stats() {
  auto& p = pool();
  return {p.system_allocations, p.hits, p.cached};
}
void trim_pool() { pool().release_all(); }

std::uint64_t available_bytes() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::numeric_limits<std::uint64_t>::max();  // not Linux, or no such line: no check
}
}  // namespace memory

}  // namespace recur
