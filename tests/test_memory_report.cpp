// Tape::memory_report() against sizes worked out by hand from what each op keeps: a node
// keeps its value (its output); backward rules read their inputs' and outputs' node values,
// so an op keeps nothing else unless it says so (OpBox::saved). float64 [3, 4] is
// 12 * 8 = 96 bytes. The peak of a checkpointed scan is also measured: a probe op inside
// the step reads Tape::bytes_held() when backward runs its rule, i.e. while the step's
// segment is recomputed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <sstream>

#include <recur/autodiff/record.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

using S = std::span<const Var>;
constexpr DType f64 = DType::float64;
constexpr std::size_t kBytes34 = 3 * 4 * 8;  // one float64 [3, 4] buffer

const OpMemory* row(const MemoryReport& r, std::string_view name) {
  for (const OpMemory& op : r.ops)
    if (op.name == name) return &op;
  return nullptr;
}

void expect_row(const MemoryReport& r, std::string_view name, std::size_t nodes, std::size_t bytes) {
  const OpMemory* op = row(r, name);
  ASSERT_NE(op, nullptr) << name;
  EXPECT_EQ(op->nodes, nodes) << name;
  EXPECT_EQ(op->bytes, bytes) << name;
}

Tensor filled(const Shape& shape, std::uint64_t seed = 1) {
  Generator gen(seed);
  return normal(shape, 0.0, 0.5, gen, f64);
}

// The identity as a view of its input (no buffer of its own); its backward rule notes the
// most bytes the tape held whenever it ran.
const Tape* g_probe_tape = nullptr;
std::size_t g_probe_peak = 0;
struct Probe {
  static constexpr std::string_view name = "probe";
  Tensor forward(const Tensor& x) const { return x; }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    g_probe_peak = std::max(g_probe_peak, g_probe_tape->bytes_held());
    return {a.grad};
  }
};
Var probe(const Var& x) { return record(Probe{}, x); }

TEST(MemoryReport, EmptyTapeReportsZero) {
  Tape tape;
  const MemoryReport r = tape.memory_report();
  EXPECT_EQ(r.nodes, 0u);
  EXPECT_EQ(r.held_bytes, 0u);
  EXPECT_EQ(r.peak_bytes, 0u);
  EXPECT_EQ(r.gradient_bytes, 0u);
  EXPECT_EQ(r.consumed_nodes, 0u);
  EXPECT_TRUE(r.ops.empty());
  EXPECT_TRUE(r.regions.empty());
  EXPECT_NE(r.to_string().find("0 nodes hold 0 B"), std::string::npos) << r;
}

TEST(MemoryReport, TanhChainHoldsOneOutputPerOp) {
  // tanh's rule is g * (1 - y^2): it reads its output, which is the node's value. Each
  // tanh holds its [3, 4] output, 96 B; the variable holds its value, 96 B.
  Tape tape;
  Var x = tape.variable(filled({3, 4}));
  Var y = x;
  constexpr std::size_t n = 5;
  for (std::size_t i = 0; i < n; ++i) y = tanh(y);
  const MemoryReport r = tape.memory_report();
  EXPECT_EQ(r.nodes, n + 1);
  expect_row(r, "tanh", n, n * 96);
  expect_row(r, "(variable)", 1, 96);
  EXPECT_EQ(r.held_bytes, (n + 1) * 96);
  EXPECT_EQ(r.held_bytes, tape.bytes_held());
  EXPECT_EQ(r.peak_bytes, r.held_bytes);  // nothing to recompute
  EXPECT_EQ(r.gradient_bytes, 96u);       // x's gradient
  EXPECT_EQ(r.ops.front().name, "tanh");  // largest first
}

TEST(MemoryReport, MatmulHoldsItsOutput) {
  // [3, 4] @ [4, 5] -> [3, 5]: 15 * 8 = 120 B. The rule reads both inputs (node values).
  Tape tape;
  Var a = tape.variable(filled({3, 4}));
  Var b = tape.constant(filled({4, 5}, 2));  // 20 * 8 = 160 B
  Var c = matmul(a, b);
  (void)c;
  const MemoryReport r = tape.memory_report();
  expect_row(r, "matmul", 1, 120);
  expect_row(r, "(constant)", 1, 160);
  expect_row(r, "(variable)", 1, 96);
  EXPECT_EQ(r.held_bytes, 96u + 160u + 120u);
  ASSERT_EQ(r.ops.size(), 3u);  // sorted by bytes
  EXPECT_EQ(r.ops[0].name, "(constant)");
  EXPECT_EQ(r.ops[1].name, "matmul");
  EXPECT_EQ(r.ops[2].name, "(variable)");
  EXPECT_EQ(r.gradient_bytes, 96u);  // only a wants one
}

TEST(MemoryReport, SharedStorageIsCountedOnce) {
  Tensor t = filled({3, 4});
  Tape tape;
  Var x = tape.variable(t);           // holds t's buffer: 96 B
  Var same = tape.constant(t);        // the same buffer again: nothing more
  Var r = reshape(x, {4, 3});         // a view of it: nothing more
  Var row0 = index(x, 0, 1);          // a view of part of it: nothing more
  Var y = tanh(r);                    // a new buffer: 96 B
  Var z = x + same;                   // a new buffer: 96 B
  (void)row0, (void)y, (void)z;
  const MemoryReport rep = tape.memory_report();
  EXPECT_EQ(rep.held_bytes, 3 * kBytes34);
  EXPECT_EQ(rep.held_bytes, tape.bytes_held());
  expect_row(rep, "(variable)", 1, 96);  // charged to the first node holding it whole
  expect_row(rep, "(constant)", 1, 0);
  expect_row(rep, "reshape", 1, 0);
  expect_row(rep, "tanh", 1, 96);
  expect_row(rep, "add", 1, 96);
  std::size_t sum = 0;
  for (const OpMemory& op : rep.ops) sum += op.bytes;
  EXPECT_EQ(sum, rep.held_bytes);  // every buffer charged exactly once
}

TEST(MemoryReport, SharedReadsWantGradients) {
  Shared w(filled({4, 4}), "w");  // 16 * 8 = 128 B
  Tape tape;
  Var h = tanh(matmul(tape.constant(filled({3, 4}, 3)), Var(w)));
  (void)h;
  const MemoryReport r = tape.memory_report();
  expect_row(r, "(shared read)", 1, 128);
  expect_row(r, "matmul", 1, 96);
  expect_row(r, "tanh", 1, 96);
  EXPECT_EQ(r.gradient_bytes, 128u);
}

// ---- scans --------------------------------------------------------------------------------

// h_t = tanh(h_{t-1}) for T steps from h0 (a variable), optionally through a probe; keeps
// the last h only, so every step's [3, 4] value is the tape's to keep or release.
struct TanhScan {
  Tape tape;
  Var h0;
  ScanResult result;
  TanhScan(std::int64_t steps, Checkpoint checkpoint, bool with_probe = false) : h0(tape.variable(filled({3, 4}))) {
    result = scan([with_probe](S a) { return with_probe ? probe(tanh(a[0])) : tanh(a[0]); },
                  {.outputs_info = {h0}, .n_steps = steps, .keep = Keep::last, .checkpoint = checkpoint});
  }
  // The loss, sum(h_T): a float64 scalar, 8 B. Recorded before a report that backward's
  // measurement is compared with.
  Var loss;
  void add_loss() { loss = sum(result[0]); }
  // backward of the loss, with the probe watching the tape.
  void backward(BackwardOptions options = {}) {
    if (!loss.defined()) add_loss();
    g_probe_tape = &tape;
    g_probe_peak = 0;
    tape.backward(loss, options);
  }
};

// The report lists one scan with these steps and policy, and its total is bytes_held().
void expect_one_scan(const TanhScan& run, const MemoryReport& r, std::int64_t steps, std::string_view policy) {
  EXPECT_EQ(r.held_bytes, run.tape.bytes_held());
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions[0].steps, steps);
  EXPECT_EQ(r.regions[0].policy, policy);
}

TEST(MemoryReport, FullTapeScanKeepsEveryStep) {
  TanhScan run(12, Checkpoint::none());
  const MemoryReport r = run.tape.memory_report();
  EXPECT_EQ(r.held_bytes, 13 * kBytes34);  // h0 and 12 steps
  expect_one_scan(run, r, 12, "full tape");
  const RegionMemory& s = r.regions.at(0);
  EXPECT_EQ(s.name, "scan #0");
  // One tanh per step: one node each, or the captured loop's one node holding them all
  // (unless the scan tests run with RECUR_SCAN_CAPTURE=off or RECUR_SCAN_LOOP_NODE=off).
  EXPECT_EQ(s.nodes, s.step.starts_with("captured, one node") ? 1u : 12u) << s.step;
  EXPECT_EQ(s.bytes, 12 * kBytes34);
  EXPECT_EQ(s.replay_bytes, 0u);
  EXPECT_EQ(r.peak_bytes, r.held_bytes);
}

TEST(MemoryReport, EveryKKeepsOneCarryPerSegment) {
  // every_k(4) over 12 steps: segments of steps 0-3, 4-7, 8-11; each keeps its last h (the
  // next segment's input) and releases 3 tanh values. Backward recomputes one segment at
  // a time: 3 values.
  TanhScan run(12, Checkpoint::every_k(4));
  const MemoryReport r = run.tape.memory_report();
  EXPECT_EQ(r.held_bytes, (1 + 3) * kBytes34);
  expect_one_scan(run, r, 12, "every_k(4)");
  const RegionMemory& s = r.regions.at(0);
  EXPECT_EQ(s.nodes, 12u);
  EXPECT_EQ(s.bytes, 3 * kBytes34);
  EXPECT_EQ(s.replay_bytes, 3 * kBytes34);
  EXPECT_EQ(r.peak_bytes, (1 + 3 + 3) * kBytes34);
  expect_row(r, "tanh", 12, 3 * kBytes34);  // the nodes are there, most values released

  // auto_sqrt: k = round(sqrt(12)) = 3, four segments of 3: 4 carries kept, 2 recomputed.
  TanhScan sqrt_run(12, Checkpoint::auto_sqrt());
  const MemoryReport q = sqrt_run.tape.memory_report();
  EXPECT_EQ(q.regions[0].policy, "auto_sqrt (k = 3)");
  EXPECT_EQ(q.held_bytes, (1 + 4) * kBytes34);
  EXPECT_EQ(q.regions[0].replay_bytes, 2 * kBytes34);
  EXPECT_EQ(q.peak_bytes, (1 + 4 + 2) * kBytes34);
}

TEST(MemoryReport, StackedOutputsOfACheckpointedScanAreHeldOnce) {
  // Keep::all stacks every step's h into one [12, 3, 4] result. With every_k(4) and with
  // snapshots(3) each step's value and its unsqueezed view point into that result, so the
  // tape holds h0 and the 12 stacked rows and nothing else: the kept carries are rows of
  // it. (Before, stack's unsqueezed views kept every step's own buffer too: 12 more.)
  for (const Checkpoint& checkpoint : {Checkpoint::every_k(4), Checkpoint::snapshots(3)}) {
    Tape tape;
    const Var h0 = tape.variable(filled({3, 4}));
    const ScanResult r = scan([](S a) { return tanh(a[0]); },
                              {.outputs_info = {h0}, .n_steps = 12, .keep = Keep::all, .checkpoint = checkpoint});
    ASSERT_EQ(r[0].shape(), (Shape{12, 3, 4}));
    const MemoryReport report = tape.memory_report();
    EXPECT_EQ(report.held_bytes, (1 + 12) * kBytes34);
    EXPECT_EQ(tape.bytes_held(), (1 + 12) * kBytes34);
    // And the gradient is the full tape's.
    Tape full_tape;
    const Var full_h0 = full_tape.variable(filled({3, 4}));
    const ScanResult full = scan([](S a) { return tanh(a[0]); }, {.outputs_info = {full_h0}, .n_steps = 12});
    const Tensor want = grad(sum(full[0] * full[0]), full_h0).value();
    EXPECT_EQ(max_abs_diff(grad(sum(r[0] * r[0]), h0).value(), want), 0.0);
  }
}

TEST(MemoryReport, PeakOfACheckpointedScanIsWhatBackwardHolds) {
  // With the probe, each step's kept carry is the probe's view of the tanh output; a
  // segment's replay makes all 4 tanh outputs again (the last one anew, beside the kept
  // view's buffer): 4 * 96 B on top of h0 and 3 carries.
  TanhScan run(12, Checkpoint::every_k(4), /*with_probe=*/true);
  run.add_loss();
  const MemoryReport before = run.tape.memory_report();
  EXPECT_EQ(before.held_bytes, 4 * kBytes34 + 8);
  EXPECT_EQ(before.regions.at(0).replay_bytes, 4 * kBytes34);
  EXPECT_EQ(before.peak_bytes, 8 * kBytes34 + 8);
  // The kept carries are the probes' views of tanh outputs whose own nodes were released:
  // the probe nodes alone hold those 3 buffers, whole, so they are charged with them.
  expect_row(before, "probe", 12, 3 * kBytes34);
  expect_row(before, "tanh", 12, 0);
  run.backward();
  EXPECT_EQ(g_probe_peak, before.peak_bytes);  // measured inside backward

  // After backward the segments are released again and the graph is consumed: the same
  // bytes held, none that a backward could still use or recompute.
  const MemoryReport after = run.tape.memory_report();
  EXPECT_EQ(after.held_bytes, before.held_bytes);
  EXPECT_EQ(after.regions.at(0).replay_bytes, 0u);
  EXPECT_EQ(after.peak_bytes, after.held_bytes);
  EXPECT_EQ(after.consumed_nodes, 12u + 12u + 1u);  // tanh, probe, sum
  // Only consumed nodes hold the 3 carries and the loss; h0 is a leaf.
  EXPECT_EQ(after.consumed_bytes, 3 * kBytes34 + 8);
}

TEST(MemoryReport, RetainedGraphKeepsItsPeak) {
  TanhScan run(12, Checkpoint::every_k(4));
  run.add_loss();
  const MemoryReport before = run.tape.memory_report();
  run.backward({.retain_graph = true});
  const MemoryReport after = run.tape.memory_report();
  EXPECT_EQ(after.consumed_nodes, 0u);
  EXPECT_EQ(after.held_bytes, before.held_bytes);
  EXPECT_EQ(after.peak_bytes, before.peak_bytes);
  EXPECT_EQ(after.regions.at(0).replay_bytes, before.regions[0].replay_bytes);
}

TEST(MemoryReport, SnapshotsHoldFewerCarriesAndBoundThePeak) {
  const std::size_t full = TanhScan(12, Checkpoint::none()).tape.memory_report().held_bytes;
  TanhScan run(12, Checkpoint::snapshots(3), /*with_probe=*/true);
  run.add_loss();
  const MemoryReport r = run.tape.memory_report();
  expect_one_scan(run, r, 12, "snapshots(3)");
  const RegionMemory& s = r.regions.at(0);
  EXPECT_LT(r.held_bytes, full / 2);
  // At most s = 3 carries (h0 included) and one step (a tanh and its probe view): replay
  // adds at most one step and 3 carries to what is held.
  EXPECT_LE(s.replay_bytes, 4 * kBytes34);
  EXPECT_GE(s.replay_bytes, kBytes34);
  run.backward();
  EXPECT_GT(g_probe_peak, r.held_bytes);  // backward did recompute
  EXPECT_LE(g_probe_peak, r.peak_bytes);  // and stayed within the reported peak,
  EXPECT_LE(r.peak_bytes - g_probe_peak, kBytes34);  // an upper bound within one carry here
  EXPECT_LT(r.peak_bytes, full);
}

TEST(MemoryReport, BudgetReportsTheSnapshotsItChose) {
  // One step's values (a tanh, 96 B) plus s - 1 carries of 96 B in 96 * 4 bytes: s = 4.
  TanhScan run(12, Checkpoint::budget(4 * kBytes34));
  const RegionMemory s = run.tape.memory_report().regions.at(0);
  EXPECT_EQ(s.policy, "budget(384 B) -> snapshots(4)");
}

TEST(MemoryReport, NestedScansAreReportedInside) {
  Tape tape;
  Var h0 = tape.variable(filled({3, 4}));
  auto inner = [](S a) { return tanh(a[0]); };
  auto r = scan(
      [&](S a) {
        auto in = scan(inner, {.outputs_info = {a[0]}, .n_steps = 2, .keep = Keep::last});
        return StepResult{in[0]};
      },
      {.outputs_info = {h0}, .n_steps = 3, .keep = Keep::last});
  const MemoryReport rep = tape.memory_report();
  ASSERT_EQ(rep.regions.size(), 4u);  // the outer one, then its 3 steps' inner scans
  EXPECT_EQ(rep.regions[0].depth, 0);
  EXPECT_EQ(rep.regions[0].steps, 3);
  EXPECT_EQ(rep.regions[0].bytes, 6 * kBytes34);  // 3 steps of 2 tanh
  for (std::size_t k = 1; k < 4; ++k) {
    EXPECT_EQ(rep.regions[k].name, "scan #" + std::to_string(k));
    EXPECT_EQ(rep.regions[k].depth, 1);
    EXPECT_EQ(rep.regions[k].steps, 2);
    EXPECT_EQ(rep.regions[k].bytes, 2 * kBytes34);
  }
}

TEST(MemoryReport, ACheckpointedScanInsideAnotherIsReplayedWithIt) {
  // Outer every_k(1) over 3 steps; each step is an inner every_k(2) scan of 2 steps of
  // probe(tanh(tanh(h))). The inner scan releases 2 tanh values per step but keeps its
  // last probe (its result, also the outer carry), which views the last tanh's buffer:
  // replaying it makes 4 tanh buffers. The outer segment replaces the inner ranges and
  // replays the same: 4 * 96 B, one outer step at a time.
  Tape tape;
  Var h0 = tape.variable(filled({3, 4}));
  auto r = scan(
      [](S a) {
        auto in = scan([](S b) { return probe(tanh(tanh(b[0]))); },
                       {.outputs_info = {a[0]}, .n_steps = 2, .keep = Keep::last, .checkpoint = Checkpoint::every_k(2)});
        return StepResult{in[0]};
      },
      {.outputs_info = {h0}, .n_steps = 3, .keep = Keep::last, .checkpoint = Checkpoint::every_k(1)});
  Var loss = sum(r[0]);
  const MemoryReport rep = tape.memory_report();
  EXPECT_EQ(rep.held_bytes, (1 + 3) * kBytes34 + 8);  // h0, 3 outer carries, the loss
  ASSERT_EQ(rep.regions.size(), 4u);
  EXPECT_EQ(rep.regions[0].replay_bytes, 4 * kBytes34);
  // The inner scans' own ranges were replaced by the outer segments, which here are exactly
  // their nodes (the outer step is nothing but the inner scan): the same replay.
  for (std::size_t k = 1; k < 4; ++k) EXPECT_EQ(rep.regions[k].replay_bytes, 4 * kBytes34);
  EXPECT_EQ(rep.peak_bytes, rep.held_bytes + 4 * kBytes34);
  g_probe_tape = &tape;
  g_probe_peak = 0;
  tape.backward(loss);
  EXPECT_EQ(g_probe_peak, rep.peak_bytes);
}

TEST(MemoryReport, ScansAreNamedByTheirFace) {
  Tape tape;
  Var h0 = tape.variable(filled({3, 4}));
  auto [carry, ys] = jax::scan([](const Var& h) { return std::pair{tanh(h), h}; }, h0, jax::no_xs, {.length = 3});
  (void)carry, (void)ys;
  const MemoryReport r = tape.memory_report();
  ASSERT_EQ(r.regions.size(), 1u);
  EXPECT_EQ(r.regions[0].name, "jax::scan #0");
  EXPECT_EQ(r.regions[0].steps, 3);
}

// ---- printing -------------------------------------------------------------------------------

TEST(MemoryReport, BytesInHumanUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(3 * 1024 * 1024), "3.0 MiB");
  EXPECT_EQ(format_bytes(std::size_t{5} << 30), "5.0 GiB");
}

TEST(MemoryReport, PrintsAnAlignedTable) {
  TanhScan run(12, Checkpoint::every_k(4));
  Var big = tanh(run.tape.variable(filled({64, 64})));  // 32 KiB
  (void)big;
  std::ostringstream os;
  os << run.tape.memory_report();
  const std::string text = os.str();
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  // Header, the op rows, total, then the scan table.
  ASSERT_EQ(lines.size(), 7u) << text;  // tanh, (variable); one scan
  EXPECT_NE(lines[0].find("backward peaks at"), std::string::npos) << text;
  EXPECT_EQ(lines[1].substr(0, 4), "  op");
  EXPECT_NE(lines[2].find("tanh"), std::string::npos) << text;  // the largest row first
  EXPECT_NE(lines[2].find("32.3 KiB"), std::string::npos) << text;  // 32 KiB + 3 * 96 B
  // The number columns are right-aligned: every row of the op table ends at one column.
  const auto total = std::find_if(lines.begin(), lines.end(), [](const auto& l) { return l.rfind("  total", 0) == 0; });
  ASSERT_NE(total, lines.end()) << text;
  for (auto l = lines.begin() + 1; l <= total; ++l) EXPECT_EQ(l->size(), lines[1].size()) << text;
  EXPECT_NE(text.find("every_k(4)"), std::string::npos) << text;
  EXPECT_EQ(run.tape.memory_report().to_string(), text);
}

TEST(MemoryReport, PrintsTheFirstTwentyScans) {
  // An outer scan of 25 steps, each running an inner scan: 26 scans, 20 rows shown.
  Tape tape;
  Var h0 = tape.variable(filled({3, 4}));
  auto r = scan(
      [](S a) {
        auto in = scan([](S b) { return tanh(b[0]); }, {.outputs_info = {a[0]}, .n_steps = 1, .keep = Keep::last});
        return StepResult{in[0]};
      },
      {.outputs_info = {h0}, .n_steps = 25, .keep = Keep::last});
  const MemoryReport rep = tape.memory_report();
  ASSERT_EQ(rep.regions.size(), 26u);
  const std::string text = rep.to_string();
  EXPECT_NE(text.find("scan #19"), std::string::npos) << text;
  EXPECT_EQ(text.find("scan #20"), std::string::npos) << text;
  EXPECT_NE(text.find("... and 6 more regions"), std::string::npos) << text;
}

}  // namespace
}  // namespace recur
