#pragma once
// Tape::memory_report(): what a tape holds for backward right now, by op and by scan, and
// the most it will hold while backward runs. Nothing is recorded for it while the tape
// records (beyond one small entry per scan): the report walks the nodes when asked.
//
// How bytes are counted. A node holds its value and the tensors its op saved besides
// (OpBox::saved(): an op that keeps more than its inputs and output says which). Every
// buffer (Storage) is counted once, at its full size, however many nodes, views or saved
// tensors share it: the walk dedupes by Storage identity. A buffer is charged to one node:
// the first (in recording order) whose value covers the whole buffer, else the first that
// holds any part of it. So a view (reshape, x[t]) costs nothing where its base is held,
// and a scan's stacked output is charged to the stack, not to the step outputs that point
// into it. The total is Tape::bytes_held().
#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace recur {

// Bytes as a person reads them: "96 B", "1.5 KiB", "12.0 MiB".
std::string format_bytes(std::size_t bytes);

// One row per op name (leaves as "(variable)", "(constant)", "(shared read)").
struct OpMemory {
  std::string name;
  std::size_t nodes = 0;  // nodes of this op on the tape
  std::size_t bytes = 0;  // bytes of the buffers charged to them
};

// How a scan keeps what backward needs (Checkpoint in ops/scan/types.hpp).
enum class ScanPolicy { full_tape, every_k, auto_sqrt, snapshots, budget };

struct ScanMemory {
  std::string name;     // the entry point and the scan's order on the tape: "scan #0"
  int depth = 0;        // 0 at top level, 1 inside another scan's step, ...
  std::int64_t steps = 0;
  ScanPolicy policy = ScanPolicy::full_tape;
  std::int64_t interval = 0;      // every_k, auto_sqrt: k (the segment length)
  std::int64_t snapshots = 0;     // snapshots, budget: s (for a budget, the s it chose)
  std::size_t budget_bytes = 0;   // budget
  std::size_t nodes = 0;          // nodes the scan recorded (its steps and its stacking)
  std::size_t bytes = 0;          // bytes charged to those nodes (an enclosed scan's included)
  // The most bytes its recomputation adds while backward runs (0 for a full tape, or once
  // a backward consumed it). every_k / auto_sqrt: the largest segment's recomputed values
  // and saved tensors (backward holds one segment at a time), measured when the segment
  // was released. snapshots / budget: an upper bound, (s - snapshots held now) carries
  // plus one step's values, measured on the first step (the schedule never holds more).
  // Counted: the recomputations of ranges within its nodes (an enclosing scan's segment
  // that is exactly a step of nothing but this scan counts here too).
  std::size_t replay_bytes = 0;
  std::string policy_text() const;  // "full tape", "every_k(10)", "snapshots(4)", ...
};

struct MemoryReport {
  std::size_t nodes = 0;
  std::size_t held_bytes = 0;      // every buffer the tape holds (= Tape::bytes_held())
  // Nodes a backward already ran through (without retain_graph), and the bytes only they
  // hold. The tape keeps their values (Var::value() still reads them) until it is
  // destroyed, but no backward can use them again.
  std::size_t consumed_nodes = 0;
  std::size_t consumed_bytes = 0;
  // The most the tape will hold while backward runs: held_bytes plus the largest
  // replay_bytes of a scan (one recomputation runs at a time). It counts node values and
  // saved tensors, not gradients: gradient_bytes (below) and the gradients in flight come
  // on top.
  std::size_t peak_bytes = 0;
  // The gradients backward delivers to leaves that need one (variables and Shared reads):
  // one buffer of each leaf's size.
  std::size_t gradient_bytes = 0;
  std::vector<OpMemory> ops;      // sorted by bytes, largest first (then by name)
  // In recording order, an enclosing scan before those inside (a scan is listed once its
  // loop has ended). Printing shows the first 20.
  std::vector<ScanMemory> scans;

  std::string to_string() const;  // the aligned table operator<< prints
};

std::ostream& operator<<(std::ostream& os, const MemoryReport& report);

namespace detail {
// What a scan leaves on its tape for the report: written once, when the loop ends.
struct ScanRecord {
  ScanMemory info;  // name, steps and policy; the sizes are filled in by the report
  std::uint32_t begin = 0, end = 0;  // its nodes, [begin, end)
};
}  // namespace detail

}  // namespace recur
