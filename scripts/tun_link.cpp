// A point-to-point link emulated in user space, for scripts/bench_netem.sh on a kernel
// without sch_netem (CONFIG_NET_SCH_NETEM unset): it attaches to a persistent TUN device
// in each of two network namespaces and forwards every IP packet read from one to the
// other, delivering it when `tc qdisc ... netem delay D rate R` would have:
//
//   start     = max(arrival, the link's previous packet done)
//   done      = start + bytes * 8 / R            (serialization at rate R)
//   delivered = done + D                          (one-way propagation delay D)
//
// which is netem's rule (its queue tail is the reference point for the next packet's
// time). A packet that would make more than --limit bytes wait in a direction is dropped,
// like netem's `limit`. Its two threads (one per direction) run SCHED_FIFO when allowed
// and with a 1 ns timer slack, so they stand for the wire rather than wait behind the
// ranks for a core.
// Build: c++ -O2 -std=c++20 -pthread scripts/tun_link.cpp -o tun_link
// Run:   tun_link NS_A DEV_A NS_B DEV_B RATE_BIT_PER_S DELAY_US LIMIT_BYTES
//        (RATE 0: no serialization delay); SIGTERM or SIGINT ends it and it prints
//        packets, bytes and drops per direction on stderr.
#include <fcntl.h>
#include <poll.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <string>
#include <thread>
#include <vector>

namespace {

[[noreturn]] void die(const std::string& what) {
  std::fprintf(stderr, "tun_link: %s: %s\n", what.c_str(), std::strerror(errno));
  std::exit(1);
}

std::int64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_MONOTONIC, &t);
  return std::int64_t{t.tv_sec} * 1'000'000'000 + t.tv_nsec;
}

// Opens the TUN device `dev` that lives in the namespace /run/netns/`ns`.
int open_tun(const std::string& ns, const std::string& dev) {
  const int home = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
  const int there = open(("/run/netns/" + ns).c_str(), O_RDONLY | O_CLOEXEC);
  if (home < 0 || there < 0) die("open the namespaces");
  if (setns(there, CLONE_NEWNET) != 0) die("setns " + ns);
  const int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) die("open /dev/net/tun");
  ifreq request{};
  request.ifr_flags = IFF_TUN | IFF_NO_PI;
  std::snprintf(request.ifr_name, IFNAMSIZ, "%s", dev.c_str());
  if (ioctl(fd, TUNSETIFF, &request) != 0) die("attach to " + dev + " in " + ns);
  if (setns(home, CLONE_NEWNET) != 0) die("setns back");
  close(there);
  close(home);
  return fd;
}

struct Packet {
  std::vector<char> bytes;
  std::int64_t deliver_ns;
};

// One direction of the link, one thread: it waits in ppoll for a packet or for the
// next delivery time, whichever comes first (one wake-up per packet, no hand-off
// between threads: each costs tens of microseconds on a virtual machine).
class Direction {
 public:
  static constexpr std::int64_t kSpinNs = 50'000;

  Direction(int from, int to, double ns_per_byte, std::int64_t delay_ns, std::int64_t limit)
      : from_(from), to_(to), ns_per_byte_(ns_per_byte), delay_ns_(delay_ns), limit_(limit) {}

  void start() {
    thread_ = std::thread([this] { loop(); });
  }
  void report(const char* name) const {
    std::fprintf(stderr, "tun_link: %s: %llu packets, %llu bytes, %llu dropped%s\n", name,
                 static_cast<unsigned long long>(packets_.load()), static_cast<unsigned long long>(bytes_.load()),
                 static_cast<unsigned long long>(drops_.load()), realtime_ ? "" : " (not SCHED_FIFO)");
  }

 private:
  void loop() {
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    const sched_param priority{.sched_priority = 50};
    realtime_ = sched_setscheduler(0, SCHED_FIFO, &priority) == 0;  // else stays SCHED_OTHER
    std::deque<Packet> queue;
    std::int64_t queued = 0, busy_until = 0;  // busy_until: the link done serializing the last packet
    for (;;) {
      std::int64_t now = now_ns();
      while (!queue.empty() && queue.front().deliver_ns <= now) {  // delivery times only grow
        const Packet& packet = queue.front();
        if (write(to_, packet.bytes.data(), packet.bytes.size()) < 0 && errno != EINTR) die("write");
        ++packets_;
        bytes_ += packet.bytes.size();
        queued -= static_cast<std::int64_t>(packet.bytes.size());
        queue.pop_front();
      }
      pollfd in{.fd = from_, .events = POLLIN, .revents = 0};
      timespec wait{};
      if (!queue.empty()) {
        // A timer wakes a thread some 30-40 us late here (a virtual machine's idle CPU);
        // the last kSpinNs before a delivery are polled without sleeping instead.
        const std::int64_t left = std::max<std::int64_t>(0, queue.front().deliver_ns - now - kSpinNs);
        wait = {.tv_sec = left / 1'000'000'000, .tv_nsec = left % 1'000'000'000};
      }
      if (ppoll(&in, 1, queue.empty() ? nullptr : &wait, nullptr) < 0) {
        if (errno == EINTR) continue;
        die("ppoll");
      }
      if (!(in.revents & POLLIN)) continue;
      for (;;) {  // every packet waiting, stamped with its arrival
        std::vector<char> buffer(65536);
        const ssize_t n = read(from_, buffer.data(), buffer.size());
        if (n < 0) {
          if (errno == EAGAIN || errno == EINTR) break;
          die("read");
        }
        now = now_ns();
        if (queued + n > limit_) {
          ++drops_;
          continue;
        }
        buffer.resize(static_cast<std::size_t>(n));
        const std::int64_t start = std::max(now, busy_until);
        busy_until = start + static_cast<std::int64_t>(ns_per_byte_ * static_cast<double>(n));
        queued += n;
        queue.push_back({std::move(buffer), busy_until + delay_ns_});
      }
    }
  }

  int from_, to_;
  double ns_per_byte_;
  std::int64_t delay_ns_, limit_;
  std::atomic<std::uint64_t> packets_{0}, bytes_{0}, drops_{0};
  std::atomic<bool> realtime_{false};
  std::thread thread_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 8) {
    std::fprintf(stderr, "usage: tun_link NS_A DEV_A NS_B DEV_B RATE_BIT_PER_S DELAY_US LIMIT_BYTES\n");
    return 2;
  }
  const double rate = std::strtod(argv[5], nullptr);
  const double ns_per_byte = rate > 0 ? 8e9 / rate : 0;
  const auto delay_ns = static_cast<std::int64_t>(std::strtod(argv[6], nullptr) * 1e3);
  const auto limit = static_cast<std::int64_t>(std::strtod(argv[7], nullptr));
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGTERM);
  sigaddset(&stop, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);  // the threads inherit the mask
  const int a = open_tun(argv[1], argv[2]), b = open_tun(argv[3], argv[4]);
  Direction a_to_b(a, b, ns_per_byte, delay_ns, limit), b_to_a(b, a, ns_per_byte, delay_ns, limit);
  a_to_b.start();
  b_to_a.start();
  std::fprintf(stderr, "tun_link: up: %s/%s <-> %s/%s, %.0f bit/s, %lld us one-way\n", argv[1], argv[2], argv[3],
               argv[4], rate, static_cast<long long>(delay_ns / 1000));
  int signal = 0;
  sigwait(&stop, &signal);
  a_to_b.report("a->b");
  b_to_a.report("b->a");
  std::fflush(stderr);
  _exit(0);
}
