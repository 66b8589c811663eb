#pragma once
// Tape::memory_report(): what a tape holds for backward right now, by op and by region, and
// the most it will hold while backward runs. A region is a stretch of nodes that a
// construct built on the tape opened and named (a loop over steps, a layer, an imported
// ONNX Loop), noted once when it closes: nothing else is recorded for the report while
// the tape records, and the report walks the nodes when asked.
//
// How bytes are counted. A node holds its value and the tensors its op saved besides
// (OpBox::saved(): an op that keeps more than its inputs and output says which). Every
// buffer (Storage) is counted once, at its full size, however many nodes, views or saved
// tensors share it: the walk dedupes by Storage identity. A buffer is charged to one node:
// the first (in recording order) whose value covers the whole buffer, else the first that
// holds any part of it. So a view (reshape, x[t]) costs nothing where its base is held,
// and a loop's stacked output is charged to the stack, not to the step outputs that point
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

struct RegionMemory {
  std::string name;     // the construct's name and its order on the tape: "<name> #0"
  int depth = 0;        // 0 at top level, 1 inside another region, ...
  std::int64_t steps = 0;
  // How the region keeps what backward needs, in its construct's words: "full tape",
  // "every_k(10)", "auto_sqrt (k = 4)", "snapshots(4)", "budget(384 B) -> snapshots(4)".
  std::string policy = "full tape";
  // How its steps were recorded: "captured" (the step function ran twice, the other steps
  // came from its program), "captured, one node" (and the loop ran as one tape node,
  // ops/scan/captured_loop_detail.hpp), "captured, one node, planned" (and that node ran on
  // buffers planned once, ops/scan/planned_loop_detail.hpp) or "recorded" with the reason
  // ("recorded: the step returns an until condition"); empty for a construct without steps of
  // its own kind.
  std::string step;
  std::size_t nodes = 0;          // nodes the region recorded (its steps and its stacking)
  std::size_t bytes = 0;          // bytes charged to those nodes (an enclosed region's included)
  // The most bytes its recomputation adds while backward runs (0 for a full tape, or once
  // a backward consumed it). Released ranges (every_k, auto_sqrt): the largest range's
  // recomputed values and saved tensors (backward holds one range at a time), measured
  // when it was released. Chains (snapshots, budget): an upper bound, (s - snapshots held
  // now) carries plus one step's values, measured on the first step (the schedule never
  // holds more). Counted: the recomputations of ranges within its nodes (an enclosing
  // region's range that is exactly a step of nothing but this region counts here too).
  std::size_t replay_bytes = 0;
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
  // replay_bytes of a region (one recomputation runs at a time). It counts node values and
  // saved tensors, not gradients: gradient_bytes (below) and the gradients in flight come
  // on top.
  std::size_t peak_bytes = 0;
  // The gradients backward delivers to leaves that need one (variables and Shared reads):
  // one buffer of each leaf's size.
  std::size_t gradient_bytes = 0;
  std::vector<OpMemory> ops;      // sorted by bytes, largest first (then by name)
  // In recording order, an enclosing region before those inside (a region is listed once
  // it has closed). Printing shows the first 20.
  std::vector<RegionMemory> regions;

  std::string to_string() const;  // the aligned table operator<< prints
};

std::ostream& operator<<(std::ostream& os, const MemoryReport& report);

namespace detail {
// What a region leaves on its tape for the report: written once, when it closes.
struct RegionRecord {
  RegionMemory info;  // name, steps and policy; the sizes are filled in by the report
  std::uint32_t begin = 0, end = 0;  // its nodes, [begin, end)
};
}  // namespace detail

}  // namespace recur
