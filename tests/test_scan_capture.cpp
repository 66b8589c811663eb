// Captured steps (ops/scan/step_program_detail.hpp): which scans capture, why the others do
// not, and cells beyond the fused three whose values and gradients, captured, equal the
// step recorded at every call (Capture::off) bit for bit, and a hand-unrolled loop of the
// same ops.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include <recur/core/blas_kernel_detail.hpp>
#include <recur/core/repeated_gemm.hpp>
#include <recur/recur.hpp>

#include <recur/autodiff/tape_access.hpp>
#include <recur/ops/scan/elementwise_chain_plan_detail.hpp>
#include <recur/ops/scan/step_rewrite_detail.hpp>
#include <recur/ops/scan/weight_grad_rows_detail.hpp>

#include "loop_node_scope.hpp"
#include "scan_capture_cells.hpp"
#include "step_gemm_scope.hpp"
#include "values.hpp"

namespace recur {
namespace {

using namespace capture_cells;  // the cells and their runs (scan_capture_cells.hpp)

// Largest |a - b| / max(|b|, 1e-3) over the elements.
double relative_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = testing::values(a), y = testing::values(b);
  double worst = x.size() == y.size() ? 0.0 : 1.0;
  for (std::size_t i = 0; i < std::min(x.size(), y.size()); ++i)
    worst = std::max(worst, std::abs(x[i] - y[i]) / std::max(std::abs(y[i]), 1e-3));
  return worst;
}

// Whether OpenBLAS gives each row of a float64 product the same bits whatever the number of
// rows multiplied with it: then a captured loop's input product over every step's rows equals
// each step's own product to the bit. Its kernels for this CPU do; those it runs on CPUs of
// before about 2011 (OPENBLAS_CORETYPE=Core2, Penryn, Nehalem, Atom, Barcelona, Bobcat, Nano)
// block the rows by their count, and the last bits of a row differ.
bool rows_keep_their_bits() {
  static const bool keep = [] {
    Generator gen(11);
    for (const auto& [m, k, n] : {std::array<std::int64_t, 3>{21, 4, 20}, {12, 7, 16}, {9, 5, 33}}) {
      const Tensor a = normal({m, k}, 0.0, 1.0, gen, DType::float64), w = normal({k, n}, 0.0, 1.0, gen, DType::float64);
      const Tensor all = matmul(a, w);
      for (std::int64_t rows = 1; rows < m; ++rows)
        if (!testing::same_bytes(matmul(a.rows(0, rows), w), all.rows(0, rows))) return false;
    }
    return true;
  }();
  return keep;
}

// Values to the bit where the BLAS keeps a row's bits (rows_keep_their_bits), else within
// 1e-12 relative, as the gradients always are: the captured step takes a weight's gradient
// over many steps' rows at once and merges products, which sums in another order.
constexpr double kGradientTolerance = 1e-12;
// The relative error the value checks allow: 1e-14 where the bits are checked too.
double value_tolerance() { return rows_keep_their_bits() ? 1e-14 : kGradientTolerance; }
void expect_same_values(const Tensor& got, const Tensor& want, const std::string& what) {
  if (rows_keep_their_bits()) {
    EXPECT_TRUE(testing::same_bytes(got, want)) << what;
  } else {
    EXPECT_LE(relative_error(got, want), kGradientTolerance) << what << " (this BLAS's rows do not keep their bits)";
  }
}
void expect_same(const CellRun& got, const CellRun& want, const std::string& what) {
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
  for (std::size_t j = 0; j < got.outputs.size(); ++j)
    EXPECT_LE(relative_error(got.outputs[j], want.outputs[j]), value_tolerance()) << what << " output " << j;
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (std::size_t k = 0; k < got.grads.size(); ++k)
    EXPECT_LE(relative_error(got.grads[k], want.grads[k]), kGradientTolerance) << what << " gradient " << k;
}

// Merging products and fusing elementwise chains (both on by default): these tests run with
// both off and both on (or with each as given).
struct FusingChains {
  explicit FusingChains(bool on, std::optional<bool> merge = std::nullopt) {
    scan_engine::detail::set_rewrite_switches({.merge_products = merge.value_or(on), .fuse_elementwise = on});
  }
  ~FusingChains() { scan_engine::detail::set_rewrite_switches({}); }
};

TEST(ScanCapture, CellsEqualTheRecordedPathAndAPlainLoop) {
  // Neither rewrite, both, and each alone.
  for (const auto& [fuse, merge] : {std::pair{false, false}, {true, true}, {true, false}, {false, true}}) {
    const FusingChains fusing(fuse, merge);
    for (const CellCase& c : cells()) {
      const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
      EXPECT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
      EXPECT_FALSE(recorded.capture.captured) << c.name;
      EXPECT_EQ(recorded.capture.reason, "capture is off");
      // Every cell's input product runs once over every step, and every product with h
      // batches its weight gradient.
      EXPECT_GE(captured.capture.pushed_out_ops, 1) << c.name;
      EXPECT_GE(captured.capture.batched_weight_grads, 1) << c.name;
      // The gates' elementwise work (two_layers' chains are three ops: too short to fuse).
      EXPECT_EQ(captured.capture.fused_chains >= 1, fuse && c.name != "two_layers") << c.name;
      if (c.name == "lstm_per_gate") {
        EXPECT_EQ(captured.capture.merged_products, merge ? 2 : 0);
      }
      expect_same(captured, recorded, c.name + " captured vs recorded");
      expect_same(captured, unrolled(c), c.name + " captured vs a plain loop");
      for (std::size_t j = 0; j < captured.outputs.size(); ++j)
        expect_same_values(captured.outputs[j], recorded.outputs[j],
                           c.name + " output " + std::to_string(j) + (fuse ? " fused" : "") + (merge ? " merged" : ""));
    }
  }
}

// Pushed-out work a block of steps at a time (6 rows per block: 2 steps of B = 3, the last
// block of 1 of T = 7): each block's input product is recorded before its first step, and
// values and gradients are still the recorded loop's and a plain loop's (to the bit for the
// values; a weight's gradient now sums the blocks' products). The products' buffers go once
// their block is done.
TEST(ScanCapture, PushedOutWorkInBlocksGivesTheRecordedResults) {
  struct Blocks {
    Blocks() { scan_engine::detail::set_rewrite_switches({.pushed_rows = 6}); }
    ~Blocks() { scan_engine::detail::set_rewrite_switches({}); }
  } blocks;
  for (const CellCase& c : cells()) {
    const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
    ASSERT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
    expect_same(captured, recorded, c.name + " in blocks vs recorded");
    expect_same(captured, unrolled(c), c.name + " in blocks vs a plain loop");
    for (std::size_t j = 0; j < captured.outputs.size(); ++j)
      expect_same_values(captured.outputs[j], recorded.outputs[j], c.name + " output " + std::to_string(j));
  }
  Tape tape;
  const CellCase c = cells()[0];  // lstm_merged: one input product per block
  const CellInputs in = make_inputs(tape, c);
  scan_cell(c, in, Capture::required);
  const MemoryReport report = tape.memory_report();
  const auto matmul = std::find_if(report.ops.begin(), report.ops.end(), [](const OpMemory& m) { return m.name == "matmul"; });
  ASSERT_NE(matmul, report.ops.end()) << report.to_string();
  EXPECT_EQ(matmul->nodes, 4u) << report.to_string();  // blocks [0, 2), [2, 4), [4, 6), [6, 7)
  EXPECT_EQ(matmul->bytes, 0u) << report.to_string();
}

// In float32 each step's product with h, and backward's g W^T, run on the layers' per-step
// kernel (libxsmm where it is built in, oneDNN for large products; core/repeated_gemm.hpp),
// the recorded step's on OpenBLAS: the same values and gradients within float32 rounding.
// (In float64 both are OpenBLAS's: the tests above.)
void expect_float32_step_products_give_the_recorded_results(blas::StepGemm which) {
  const testing::UseStepGemm use(which);
  const CellCase c = cells()[0];
  std::vector<Tensor> outs[2], grads[2];
  for (const Capture capture : {Capture::off, Capture::required}) {
    Tape tape;
    CellInputs in = make_inputs(tape, c);
    auto to32 = [&](Var& v) { v = tape.variable(v.value().to(DType::float32)); };
    for (Var& p : in.params) to32(p);
    for (Var& s : in.states) to32(s);
    to32(in.xs);
    const ScanResult r = scan_cell(c, in, capture);
    ASSERT_EQ(r.capture.captured, capture == Capture::required) << r.capture.reason;
    Var loss = sum(r[0] * r[0]) + sum(r[1]);
    tape.backward(loss);
    const int k = capture == Capture::required;
    for (const Var& o : r.outputs) outs[k].push_back(o.value());
    for (const Var& p : in.params) grads[k].push_back(p.grad());
    grads[k].push_back(in.xs.grad());
  }
  for (std::size_t j = 0; j < outs[0].size(); ++j) EXPECT_LE(relative_error(outs[1][j], outs[0][j]), 1e-5) << "output " << j;
  for (std::size_t j = 0; j < grads[0].size(); ++j) EXPECT_LE(relative_error(grads[1][j], grads[0][j]), 1e-4) << "gradient " << j;
}

TEST(ScanCapture, Float32StepProductsGiveTheRecordedResults) {
  expect_float32_step_products_give_the_recorded_results(blas::StepGemm::automatic);
}

TEST(ScanCapture, Float32StepProductsOnOnednnGiveTheRecordedResults) {
  if (!blas::onednn_built_in()) GTEST_SKIP() << "recur was built without oneDNN";
  {  // this cell's products, h W [B, 4H] and g W^T, do run on oneDNN
    const testing::UseStepGemm use(blas::StepGemm::onednn);
    const std::vector<float> w(static_cast<std::size_t>(kH * 4 * kH), 0.5f);
    EXPECT_STREQ(blas::RepeatedGemm<float>(3, 4 * kH, kH, w.data(), 4 * kH, false, kH, 4 * kH, 0.f).backend(), "onednn");
    EXPECT_STREQ(blas::RepeatedGemm<float>(3, kH, 4 * kH, w.data(), 4 * kH, true, 4 * kH, kH, 0.f).backend(), "onednn");
  }
  expect_float32_step_products_give_the_recorded_results(blas::StepGemm::onednn);
}

// A loop's float32 products run on a kernel of their own only where laying the weight out
// for it pays (RepeatedGemm::worth_laying_out): two steps or more, and for products this
// small, where OpenBLAS's AVX-512 kernels read the weight in place, 16 rows or more in all
// (steps x batch). Otherwise matmul takes them (as the recorded step's do), and the product's
// values are matmul's, to the bit.
TEST(ScanCapture, TheProductsOfALoopOfFewRowsRunOnMatmul) {
  Generator gen(3);
  const Tensor w = uniform({kH, 4 * kH}, -1.0, 1.0, gen);
  const bool in_place = blas::detail::is_avx512_core(recur::blas_info().core);
  std::cout << "OpenBLAS runs " << recur::blas_info().core << ": small products of few rows "
            << (in_place ? "stay on matmul" : "run on the kernel from two steps") << "\n";
  struct Case {
    std::int64_t steps, batch;
    bool kernel;
  };
  for (const Case c : {Case{1, 1, false}, Case{1, 20, false}, Case{3, 1, !in_place}, Case{15, 1, !in_place},
                       Case{5, 3, !in_place}, Case{16, 1, true}, Case{4, 4, true}, Case{200, 1, true}}) {
    const auto rows = std::make_shared<scan_engine::detail::WeightGradRows>(c.steps * c.batch, false);
    const recur::detail::OpBox op = scan_engine::detail::step_matmul_op(false, rows, c.steps);
    const auto kernels = scan_engine::detail::step_product_kernels(op, c.batch, w);
    ASSERT_TRUE(kernels.has_value());
    const std::string name = std::to_string(c.steps) + " steps of " + std::to_string(c.batch);
    EXPECT_EQ(kernels->forward != nullptr, c.kernel) << name;
    EXPECT_EQ(kernels->backward != nullptr, c.kernel) << name;
    if (c.kernel) continue;
    const Tensor h = uniform({c.batch, kH}, -1.0, 1.0, gen);
    const Tensor* inputs[] = {&h, &w};
    const Tensor y = op.replay(InputList<Tensor>(inputs, 2));
    EXPECT_EQ(testing::values(y), testing::values(matmul(h, w))) << name;
  }
}

// No rows at all: nothing to batch, and the same (empty) results.
TEST(ScanCapture, AnEmptyBatchGivesTheRecordedResults) {
  const FusingChains fusing(true);
  CellCase c = cells()[0];
  c.states = {{0, kH}, {0, kH}};
  c.xs = {kT, 0, kI};
  const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
  EXPECT_TRUE(captured.capture.captured) << captured.capture.reason;
  EXPECT_EQ(captured.capture.batched_weight_grads, 0);
  expect_same(captured, recorded, "B = 0");
}

// One row: the chains read a bias's columns as any input's (no row is repeated), every
// cell equal to its recorded step.
TEST(ScanCapture, ABatchOfOneRowGivesTheRecordedResults) {
  const FusingChains fusing(true);
  for (CellCase c : cells()) {
    for (Shape& s : c.states) s[0] = 1;
    c.xs[1] = 1;
    const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
    EXPECT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
    expect_same(captured, recorded, c.name + " B = 1");
  }
}

// Long rows in several blocks (H = 130, B = 17: blocks of 15 rows, then one of 2): the
// merged LSTM, the GRU and a cell of every op a chain fuses (also at B = 3, H = 5) equal
// their recorded steps and a plain loop of the same ops.
TEST(ScanCapture, LongRowsGiveTheRecordedResults) {
  const FusingChains fusing(true);
  constexpr std::int64_t h = 130, b = 17;
  const std::vector<CellCase> wide = {
      {"lstm_merged", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}, {b, h}}, {4, b, kI}, lstm_merged},
      {"gru_by_hand", {{kI, 3 * h}, {h, 3 * h}, {3 * h}, {3 * h}}, {{b, h}}, {4, b, kI}, gru_by_hand},
      {"every_chain_op", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}}, {4, b, kI}, every_chain_op},
      {"every_chain_op B = 3", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{kB, kH}}, {4, kB, kI}, every_chain_op}};
  for (const CellCase& c : wide) {
    const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
    EXPECT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
    EXPECT_GE(captured.capture.fused_chains, 1) << c.name;
    expect_same(captured, recorded, c.name);
    expect_same(captured, unrolled(c), c.name + " against a plain loop");
  }
}

// Largest |a - b| over the elements, against b's largest |element|.
double scaled_error(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = testing::values(a), y = testing::values(b);
  if (x.size() != y.size()) return 1.0;
  double diff = 0, scale = 0;
  for (std::size_t i = 0; i < x.size(); ++i) diff = std::max(diff, std::abs(x[i] - y[i])), scale = std::max(scale, std::abs(y[i]));
  return diff / std::max(scale, 1e-300);
}

// A chain of 8192 elements or more runs its blocks in tiles over recur's threads where a
// loop's per-step work shares (StepSplit; ChainBlocks::tiles): its values and gradients are
// one thread's to the bit (a broadcast input's gradient sums each block's partial in block
// order), and the recorded step's within the usual tolerance. B32 H256: four blocks a chain.
TEST(ScanCapture, ChainsGiveOneThreadsBitsWithTheirBlocksShared) {
  SKIP_UNLESS_TILES_CAN_BE_SHARED();
  const FusingChains fusing(true);
  constexpr std::int64_t h = 256, b = 32, t = 3;
  const std::vector<CellCase> wide = {
      {"lstm_merged", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}, {b, h}}, {t, b, kI}, lstm_merged},
      {"lstm_peephole", {{kI, 4 * h}, {h, 4 * h}, {4 * h}, {h}, {h}, {h}}, {{b, h}, {b, h}}, {t, b, kI}, lstm_peephole},
      {"gru_by_hand", {{kI, 3 * h}, {h, 3 * h}, {3 * h}, {3 * h}}, {{b, h}}, {t, b, kI}, gru_by_hand},
      {"every_chain_op", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}}, {t, b, kI}, every_chain_op},
      {"sums_in_a_chain", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}, {b, h}}, {t, b, kI}, sums_in_a_chain},
      {"unary_rules_in_a_chain", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}}, {t, b, kI}, unary_rules_in_a_chain}};
  for (const CellCase& c : wide) {
    CellRun alone, shared;
    {
      const testing::UseStepSplit split(blas::StepSplit::never, 2);
      const std::uint32_t jobs = parallel::tile_team_jobs();
      alone = run_cell(c, Capture::required);
      EXPECT_EQ(parallel::tile_team_jobs(), jobs) << c.name << ": nothing may share under StepSplit::never";
    }
    {
      const testing::UseStepSplit split(blas::StepSplit::always, 2);
      const testing::HelpersClaimFirst helpers_first;  // a helper's tiles in every shared chain
      const std::uint64_t helped = parallel::tile_team_helper_tiles();
      shared = run_cell(c, Capture::required);
      EXPECT_GT(parallel::tile_team_helper_tiles(), helped) << c.name << ": no helper ran a chain's blocks";
    }
    EXPECT_TRUE(shared.capture.captured) << c.name << ": " << shared.capture.reason;
    EXPECT_GE(shared.capture.fused_chains, 1) << c.name;
    ASSERT_EQ(shared.outputs.size(), alone.outputs.size()) << c.name;
    for (std::size_t j = 0; j < alone.outputs.size(); ++j)
      EXPECT_TRUE(testing::same_bytes(shared.outputs[j], alone.outputs[j])) << c.name << " output " << j;
    ASSERT_EQ(shared.grads.size(), alone.grads.size()) << c.name;
    for (std::size_t k = 0; k < alone.grads.size(); ++k)
      EXPECT_TRUE(testing::same_bytes(shared.grads[k], alone.grads[k])) << c.name << " gradient " << k;
    const CellRun recorded = run_cell(c, Capture::off);
    for (std::size_t j = 0; j < recorded.outputs.size(); ++j)
      EXPECT_LE(relative_error(shared.outputs[j], recorded.outputs[j]), value_tolerance()) << c.name << " output " << j;
    for (std::size_t k = 0; k < recorded.grads.size(); ++k)
      EXPECT_LE(scaled_error(shared.grads[k], recorded.grads[k]), 1e-13) << c.name << " gradient " << k;
  }
}

// Captured against recorded and a plain loop: values as every cell's, gradients within 1e-14
// of each one's largest element (the tests below say why not element by element).
void expect_same_to_the_largest_element(const CellCase& c) {
  const CellRun captured = run_cell(c, Capture::required);
  EXPECT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
  EXPECT_EQ(captured.capture.fused_chains, 1) << c.name;
  for (const CellRun& want : {run_cell(c, Capture::off), unrolled(c)}) {
    ASSERT_EQ(captured.outputs.size(), want.outputs.size()) << c.name;
    for (std::size_t j = 0; j < want.outputs.size(); ++j)
      EXPECT_LE(relative_error(captured.outputs[j], want.outputs[j]), value_tolerance()) << c.name << " output " << j;
    ASSERT_EQ(captured.grads.size(), want.grads.size()) << c.name;
    for (std::size_t k = 0; k < want.grads.size(); ++k)
      EXPECT_LE(scaled_error(captured.grads[k], want.grads[k]), 1e-14) << c.name << " gradient " << k;
  }
}

// A chain's backward hands a sum's gradient to its operands without copying it; the cell
// mixes such sums with what must not be handed on (sums_in_a_chain). Against the recorded
// step and a plain loop, in one block and in several: values as every cell's; gradients
// within 1e-14 of each one's largest element (measured: up to 9e-16). A weight's gradient is
// summed over steps' rows and a bias's over a block's rows in another order, and this cell's
// weight gradients have elements near zero, where that order moves them by up to 1.4e-12 of
// themselves: more than kGradientTolerance, element by element.
TEST(ScanCapture, SumsInAChainHandTheirGradientsOn) {
  const FusingChains fusing(true);
  constexpr std::int64_t h = 130, b = 17;
  for (const CellCase& c : std::vector<CellCase>{
           {"sums_in_a_chain", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}, {b, h}}, {4, b, kI}, sums_in_a_chain},
           {"sums_in_a_chain B = 3", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{kB, kH}, {kB, kH}}, {kT, kB, kI},
            sums_in_a_chain}})
    expect_same_to_the_largest_element(c);
}

// One-operand ops whose rules the chain's backward folds into their readers' passes
// (unary_rules_in_a_chain), against the recorded step and a plain loop, in one block and in
// several. Element by element, h0's gradient moved by up to 1.7e-12 of itself on OpenBLAS's
// Cooperlake kernels under OMP_WAIT_POLICY=PASSIVE (near-zero elements; the weight gradients
// are summed in another order), so as above.
TEST(ScanCapture, FoldedRulesGiveTheRecordedGradients) {
  const FusingChains fusing(true);
  constexpr std::int64_t h = 130, b = 17;
  for (const CellCase& c : std::vector<CellCase>{
           {"unary_rules_in_a_chain", {{kI, 4 * h}, {h, 4 * h}, {4 * h}}, {{b, h}}, {4, b, kI}, unary_rules_in_a_chain},
           {"unary_rules_in_a_chain B = 3", {{kI, 4 * kH}, {kH, 4 * kH}, {4 * kH}}, {{kB, kH}}, {4, kB, kI},
            unary_rules_in_a_chain}})
    expect_same_to_the_largest_element(c);
}

// The op names `c`'s captured scan recorded: before the loop, its steps, the outputs stacked.
std::vector<std::string> step_ops(const CellCase& c) {
  const testing::LoopNodeScope per_op(false);  // the steps' own nodes
  Tape tape;
  const CellInputs in = make_inputs(tape, c);
  const std::uint32_t before = tape.size();
  const ScanResult r = scan_cell(c, in, Capture::required);
  EXPECT_TRUE(r.capture.captured) << r.capture.reason;
  std::vector<std::string> names;
  for (std::uint32_t id = before; id < tape.size(); ++id)
    if (const auto d = TapeAccess::describe(tape, id)) names.push_back(std::string(d->op));
  return names;
}

// The sums before a split (x W + h U + b, then four gates) run inside the gates' chain, on
// each gate's columns: the captured LSTM and GRU record no add of their own. The GRU's
// x W + b_ih too, though it reads the sequence alone: only the chain reads it (through the
// gates' slices), so it runs there instead of once over every step before the loop.
TEST(ScanCapture, SumsBeforeASplitRunInsideTheChain) {
  const FusingChains fusing(true);
  for (const CellCase& c : cells()) {
    if (c.name != "lstm_merged" && c.name != "gru_by_hand" && c.name != "lstm_peephole") continue;
    const std::vector<std::string> ops = step_ops(c);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 0) << c.name;
    // No gate is sliced out at any step (unfused: one slice per gate per step).
    EXPECT_LT(std::count(ops.begin(), ops.end(), "slice"), kT) << c.name;
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "scan_elementwise_chain"), kT) << c.name;
  }
  const FusingChains unfused(false);  // unfused: the two sums and c' = f c + i g at every step
  const std::vector<std::string> ops = step_ops(cells()[0]);
  EXPECT_EQ(std::count(ops.begin(), ops.end(), "add"), 3 * kT) << "lstm_merged unfused";
  EXPECT_GE(std::count(ops.begin(), ops.end(), "slice"), 4 * kT) << "lstm_merged unfused";
  // Without chains the GRU's x W + b_ih runs once, over every step; each step has five sums
  // (h U + b_hh, and four in the gates).
  const std::vector<std::string> gru = step_ops(cells()[3]);
  EXPECT_EQ(std::count(gru.begin(), gru.end(), "add"), 1 + 5 * kT) << "gru_by_hand unfused";
}

// Elementwise work on the sequence alone runs once over every step before the loop unless a
// chain takes it in: in h' = tanh(sigmoid(x) W + h U + b) a product reads sigmoid(x); in
// h' = tanh(x W + b + h U) the step's chain (add, tanh) is too short to fuse, so x W + b
// runs before the loop too. Both cells equal their recorded steps and a plain loop.
StepResult squashed_input(S a) {
  return {tanh(matmul(sigmoid(a[0]), a[2]) + matmul(a[1], a[3]) + a[4])};
}
StepResult elman_bias_first(S a) { return {tanh(matmul(a[0], a[2]) + a[4] + matmul(a[1], a[3]))}; }
TEST(ScanCapture, ElementwiseWorkOnTheSequenceRunsBeforeTheLoopUnlessAChainTakesItIn) {
  const FusingChains fusing(true);
  const std::vector<Shape> params{{kI, kH}, {kH, kH}, {kH}};
  const CellCase squashed{"squashed_input", params, {{kB, kH}}, {kT, kB, kI}, squashed_input};
  const CellCase elman{"elman_bias_first", params, {{kB, kH}}, {kT, kB, kI}, elman_bias_first};
  const std::vector<std::string> a = step_ops(squashed), b = step_ops(elman);
  EXPECT_EQ(std::count(a.begin(), a.end(), "sigmoid"), 1);
  EXPECT_EQ(std::count(b.begin(), b.end(), "add"), 1 + kT);  // x W + b once, then + h U at each step
  for (const CellCase& c : {squashed, elman}) {
    const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
    EXPECT_TRUE(captured.capture.captured) << c.name << ": " << captured.capture.reason;
    EXPECT_EQ(captured.capture.fused_chains, 0) << c.name;
    expect_same(captured, recorded, c.name);
    expect_same(captured, unrolled(c), c.name + " against a plain loop");
  }
}

// A sequence whose every use was pushed out of the loop (x W over all steps) is not indexed
// at every step: the steps read only their rows of the product.
TEST(ScanCapture, ASequenceReadOnlyOutsideTheLoopIsNotIndexedAtEveryStep) {
  for (const CellCase& c : cells()) {
    if (c.name != "lstm_merged" && c.name != "gru_by_hand") continue;
    const std::vector<std::string> ops = step_ops(c);
    EXPECT_EQ(std::count(ops.begin(), ops.end(), "index"), kT) << c.name;  // a row of x W per step, no x_t
  }
}

// A chain that reads one input both through a full-width slice and whole: both shares of
// its gradient arrive (neither write covers the other).
StepResult slice_and_whole(S a) {
  const Var &x = a[0], &h = a[1];
  const Var sliced = tanh(slice(h, 1, 0, kH) + matmul(x, a[2]));  // the slice's slot comes first
  const Var whole = sigmoid(h);
  return {sliced * whole + h};
}

TEST(ScanCapture, AnInputReadSlicedAndWholeGetsBothGradients) {
  const FusingChains fusing(true);
  const CellCase c{"slice_and_whole", {{kI, kH}}, {{kB, kH}}, {kT, kB, kI}, slice_and_whole};
  const CellRun captured = run_cell(c, Capture::required), recorded = run_cell(c, Capture::off);
  ASSERT_TRUE(captured.capture.captured) << captured.capture.reason;
  EXPECT_GE(captured.capture.fused_chains, 1);
  expect_same(captured, recorded, "slice_and_whole");
  expect_same(captured, unrolled(c), "slice_and_whole against a plain loop");
}

// Which one-operand instructions the backward folds into their reader's pass: the program
// of unary_rules_in_a_chain's shape, written out (slots g0, g1, g2, h, g4), and more.
TEST(ScanCapture, AChainFoldsTheRulesThatKeepTheOrderOfItsSums) {
  using scan_engine::detail::ChainCode;
  using scan_engine::detail::ChainProgram;
  ChainProgram p;
  p.slots = {{0, -1}, {1, -1}, {2, -1}, {3, -1}, {4, -1}};
  auto in = [](std::uint16_t j) { return scan_engine::detail::ChainOperand{true, j}; };
  auto v = [](std::uint16_t k) { return scan_engine::detail::ChainOperand{false, k}; };
  p.code = {{ChainCode::sigmoid, in(1), {}},  // 0 sigmoid(g1): read by a folded tanh: kept
            {ChainCode::tanh, v(0), {}},      // 1 tanh(0): folded into 2
            {ChainCode::mul, v(1), in(3)},    // 2
            {ChainCode::neg, in(2), {}},      // 3 -g2: read by a folded relu: kept
            {ChainCode::relu, v(3), {}},      // 4 folded into 6
            {ChainCode::exp, in(0), {}},      // 5 folded into 6 (g0 is read by 13, after 6: not between)
            {ChainCode::mul, v(4), v(5)},     // 6
            {ChainCode::mul, v(2), v(6)},     // 7
            {ChainCode::sigmoid, v(7), {}},   // 8 swish: its reader reads 7 too: kept
            {ChainCode::mul, v(7), v(8)},     // 9
            {ChainCode::neg, v(9), {}},       // 10 an output: kept
            {ChainCode::tanh, v(10), {}},     // 11 read twice: kept
            {ChainCode::add, v(11), v(11)},   // 12
            {ChainCode::neg, in(0), {}},      // 13 its reader adds: a copy, read where it is
            {ChainCode::add, v(13), v(12)},   // 14
            {ChainCode::sigmoid, in(4), {}},  // 15 kept: 16, between it and its reader, reads g4 too
            {ChainCode::mul, in(4), in(3)},   // 16
            {ChainCode::mul, v(15), v(16)}};  // 17
  p.outputs = {14, 10, 17};
  p.shape = {2, 3};
  scan_engine::detail::chain::plan_backward(p);
  const std::vector<std::uint8_t> want = {0, 1, 0, 0, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  EXPECT_EQ(p.folded, want);
}

TEST(ScanCapture, PerGateProductsMergeIntoOne) {
  const CellRun r = run_cell(cells()[1], Capture::required);  // the default: merged
  ASSERT_TRUE(r.capture.captured) << r.capture.reason;
  EXPECT_EQ(r.capture.merged_products, 2);  // the four x products, and the four h products
  const FusingChains apart(false);
  EXPECT_EQ(run_cell(cells()[1], Capture::required).capture.merged_products, 0);
}

// Finite differences through the captured peephole LSTM (first and second order: the
// second runs the batched products' create_graph rules).
TEST(ScanCapture, PeepholeLstmMatchesFiniteDifferences) {
  const FusingChains fusing(true);
  const CellCase c = cells()[2];
  std::vector<Tensor> inputs;
  std::uint64_t seed = 1;
  for (const Shape& s : c.parameters) inputs.push_back(init(seed++, s));
  for (const Shape& s : c.states) inputs.push_back(init(seed++, s));
  inputs.push_back(init(seed++, Shape{4, kB, kI}, 1.0));
  const std::size_t np = c.parameters.size();
  bool captured = false;
  const GradCheckReport report = check_gradients(
      [&](S v) {
        const ScanResult r = scan(c.step, {.sequences = {v.back()},
                                           .outputs_info = {v[np], v[np + 1]},
                                           .non_sequences = std::vector<Var>(v.begin(), v.begin() + np),
                                           .capture = Capture::required});
        captured = captured || r.capture.captured;
        return r[0] * r[1];
      },
      inputs);
  EXPECT_TRUE(report.ok) << report.failure;
  EXPECT_TRUE(captured);
}

// Every option of the loop, captured and recorded: the same values and gradients.
TEST(ScanCapture, EveryOptionGivesTheRecordedResults) {
  const FusingChains fusing(true);
  const CellCase c = cells()[0];
  const std::vector<std::pair<std::string, ScanOptions>> options{
      {"truncate_gradient 2", {.truncate_gradient = 2}},
      {"truncate_gradient 0", {.truncate_gradient = 0}},
      {"go_backwards", {.go_backwards = true}},
      {"n_steps 5", {.n_steps = 5}},
      {"n_steps -4", {.n_steps = -4}},
      {"every_k 2", {.checkpoint = Checkpoint::every_k(2)}},
      {"auto_sqrt", {.checkpoint = Checkpoint::auto_sqrt()}},
      {"snapshots 2", {.checkpoint = Checkpoint::snapshots(2)}},
      {"budget", {.checkpoint = Checkpoint::budget(4096)}},
      {"lengths", {.lengths = SequenceLengths{7, 2, 5}}},
      {"lengths, truncate_gradient 3", {.truncate_gradient = 3, .lengths = SequenceLengths{7, 0, 4}}},
      {"lengths, go_backwards", {.go_backwards = true, .lengths = SequenceLengths{3, 7, 6}}},
      {"keep last", {.keep = Keep::last}},
  };
  for (const auto& [name, o] : options) {
    const CellRun captured = run_cell(c, Capture::required, o), recorded = run_cell(c, Capture::off, o);
    EXPECT_TRUE(captured.capture.captured) << name << ": " << captured.capture.reason;
    expect_same(captured, recorded, name);
  }
}

// A checkpoint keeps each step's output, which a captured step's chain makes: the chain's
// values for backward go all the same (it makes them again in backward), so a captured
// checkpointed loop holds what the recorded one holds, not every step's gate values.
TEST(ScanCapture, ACheckpointDropsTheChainsValuesOfTheStepsItKeeps) {
  const FusingChains fusing(true);
  const CellCase c = cells()[0];  // lstm_merged: the chain's outputs are the step's h' and c'
  const std::pair<std::string, Checkpoint> policies[] = {
      {"every_k(2)", Checkpoint::every_k(2)}, {"auto_sqrt", Checkpoint::auto_sqrt()}, {"snapshots(2)", Checkpoint::snapshots(2)}};
  auto chain_bytes = [](const Tape& tape) {
    for (const OpMemory& m : tape.memory_report().ops)
      if (m.name == "scan_elementwise_chain") return m.bytes;
    return std::size_t{0};
  };
  const std::size_t one_step = 4 * kB * kH * sizeof(double);  // i, f, g and o of one step
  for (const auto& [name, checkpoint] : policies) {
    std::size_t held[2] = {0, 0};
    std::vector<Tensor> grads[2];
    for (const Capture capture : {Capture::off, Capture::required}) {
      const bool captured = capture == Capture::required;
      Tape tape;
      const CellInputs in = make_inputs(tape, c);
      const ScanResult r = scan_cell(c, in, capture, {.checkpoint = checkpoint});
      EXPECT_EQ(r.capture.captured, captured) << r.capture.reason;
      held[captured] = tape.bytes_held();
      EXPECT_LE(chain_bytes(tape), one_step) << name;  // at most the last step's (snapshots keep it whole)
      // Two passes (the first keeps the graph): each chain makes its values again for its
      // backward and lets them go after it, so they do not pile up over the loop.
      const Var loss = sum(r[0] * r[0] * r[1]);
      tape.backward(loss, {.retain_graph = true});
      EXPECT_LE(chain_bytes(tape), one_step) << name << " after a backward pass";
      tape.backward(loss);
      EXPECT_LE(chain_bytes(tape), one_step) << name << " after two";
      for (const Var& p : in.params) grads[captured].push_back(p.grad());
    }
    EXPECT_LE(held[1], held[0]) << name;  // captured, no more than recorded
    for (std::size_t k = 0; k < grads[0].size(); ++k)
      EXPECT_LE(relative_error(grads[1][k], grads[0][k]), 1e-12) << name << " gradient " << k;
  }
}

// Without gradients the captured step runs forward only (values only, compacted per step).
TEST(ScanCapture, WithoutGradientsTheValuesAreTheSame) {
  const FusingChains fusing(true);
  for (const CellCase& c : cells()) {
    std::vector<Tensor> outs[2];
    for (int pass = 0; pass < 2; ++pass) {
      Tape tape;
      NoGrad off;
      const ScanResult r =
          scan_cell(c, make_inputs(tape, c, true, true), pass == 0 ? Capture::required : Capture::off);
      EXPECT_EQ(r.capture.captured, pass == 0) << c.name << ": " << r.capture.reason;
      for (const Var& v : r.outputs) outs[pass].push_back(v.value());
    }
    for (std::size_t j = 0; j < outs[0].size(); ++j)
      EXPECT_LE(relative_error(outs[0][j], outs[1][j]), value_tolerance()) << c.name;
  }
}

// Gradients of gradients through a captured step: create_graph records the batched
// products' rules as matmul's.
TEST(ScanCapture, SecondOrderThroughACapturedStep) {
  const FusingChains fusing(true);  // the chain records its ops and rules under create_graph
  const CellCase c = cells()[3];
  Tensor result[2];
  for (int pass = 0; pass < 2; ++pass) {
    Tape tape;
    const CellInputs in = make_inputs(tape, c, false, true);
    const ScanResult r = scan_cell(c, in, pass == 0 ? Capture::required : Capture::off);
    const Var g = grad(sum(r[0] * r[0]), in.params[1], {.create_graph = true});
    result[pass] = tape.grad(std::vector<Var>{sum(g * g)}, std::vector<Var>{in.params[0]})[0].value();
  }
  EXPECT_LE(relative_error(result[0], result[1]), 1e-12);
}

// ---- what is not captured, and why --------------------------------------------------------

// h_t = step(x_t, h_{t-1}) over `steps` rows of a fixed xs [steps, width], from zeros.
ScanResult running_sum(const StepFn& step, Capture capture = Capture::automatic, std::int64_t steps = 5,
                       std::int64_t width = 2) {
  Tape& tape = Tape::current();
  return scan(step, {.sequences = {tape.constant(init(9, {steps, width}, 1.0))},
                     .outputs_info = {tape.constant(zeros({width}, f64))},
                     .capture = capture});
}

TEST(ScanCapture, StepsThatAreNotTheSameEveryStepAreRecordedAndSaySo) {
  Tape tape;
  const std::vector<std::pair<StepFn, std::string>> cases{
      {[](S a) -> StepResult { return a[0] + a[1] * (sum(a[1]).value().item<double>() > 0 ? 1.0 : 2.0); },
       "the step reads a value on the host (item() or at())"},
      {[](S a) -> StepResult { return a[0] + a[1] * (a[1].value().at<double>({0}) > 0 ? 1.0 : 2.0); },
       "the step reads a value on the host (item() or at())"},
      {[](S a) -> StepResult {
         NoGrad off;  // an inner scan without gradients notes no region, and still counts
         return scan([](S b) -> StepResult { return b[0] + b[1]; },
                     {.sequences = {a[0]}, .outputs_info = {a[1]}, .keep = Keep::last})[0];
       },
       "the step runs a loop of its own"},
      {[](S a) -> StepResult { return a[0] + Tape::current().constant(a[1].value()) * 2.0; }, "changes between steps"},
      {[](S a) -> StepResult { return StepResult({a[0] + a[1]}, {}, until(greater(sum(a[1]), scalar_like(a[1], 100.0)))); },
       "the step returns an until condition"},
      {[](S a) -> StepResult {
         return scan([](S b) -> StepResult { return b[0] + b[1]; }, {.sequences = {a[0]}, .outputs_info = {a[1]}, .keep = Keep::last})[0] *
                1.0;
       },
       "the step runs a loop of its own"},
  };
  for (const auto& [step, reason] : cases) {
    const ScanResult r = running_sum(step, Capture::required);  // required: these do not count
    EXPECT_FALSE(r.capture.captured) << reason;
    EXPECT_NE(r.capture.reason.find(reason), std::string::npos) << r.capture.reason;
  }
  const ScanResult few = running_sum([](S a) -> StepResult { return a[0] + a[1]; }, Capture::automatic, 2);
  EXPECT_EQ(few.capture.reason, "fewer than 3 steps");
}

TEST(ScanCapture, RequiredRefusesALimitationOfTheCapture) {
  Tape tape;
  const auto makes_a_variable = [](S a) -> StepResult { return a[0] + a[1] * Tape::current().variable(ones({2}, f64)); };
  // (1024 steps: a smaller loop is recorded for its size before its program is read.)
  const ScanResult automatic = running_sum(makes_a_variable, Capture::automatic, 1024);
  EXPECT_FALSE(automatic.capture.captured);
  EXPECT_EQ(automatic.capture.reason, "the step makes a variable (Tape::variable)");
  const ScanResult small = running_sum(makes_a_variable);
  EXPECT_EQ(small.capture.reason.rfind("the loop is too small for capture to pay", 0), 0u) << small.capture.reason;
  const std::uint32_t before = tape.size();
  try {
    running_sum(makes_a_variable, Capture::required);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("the step makes a variable"), std::string::npos) << e.what();
  }
  EXPECT_EQ(tape.size(), before + 2);  // as it was, but for xs and h0 made before scan ran
}

TEST(ScanCapture, TheMemoryReportSaysWhichPathRan) {
  Tape tape;
  const Var w = tape.variable(init(3, {2}));
  running_sum([&](S a) -> StepResult { return a[0] + a[1] * w; }, Capture::automatic, 1024);
  running_sum([&](S a) -> StepResult { return StepResult({a[0] + a[1] * w}, {}, until(greater(sum(a[1]), scalar_like(a[1], 100.0)))); });
  running_sum([&](S a) -> StepResult { return a[0] + a[1] * w; });
  const MemoryReport report = tape.memory_report();
  ASSERT_EQ(report.regions.size(), 3u);
  EXPECT_EQ(report.regions[0].step, "captured");
  EXPECT_EQ(report.regions[1].step, "recorded: the step returns an until condition");
  EXPECT_EQ(report.regions[2].step,
            "recorded: the loop is too small for capture to pay (5 steps of values of at most 2 elements)");
  EXPECT_NE(report.to_string().find("captured"), std::string::npos);
}

// Capturing costs the trial's two steps again and work per op; a loop of few elements in all
// (steps x the step's largest value, under 2048), or of fewer than 6 steps of values under
// 16384 elements, records its steps faster, so where capture is automatic it is recorded,
// saying so, and the trial's call of the step function is its first step (not made again).
// Capture::required captures it all the same.
TEST(ScanCapture, ALoopTooSmallToPayIsRecordedUnlessCaptureIsRequired) {
  Tape tape;
  int calls = 0;
  struct Case {
    Capture capture;
    std::int64_t steps, width;
    bool captured;
  };
  for (const Case c : {Case{Capture::automatic, 1023, 2, false}, Case{Capture::automatic, 1024, 2, true},
                       Case{Capture::automatic, 5, 2, false}, Case{Capture::automatic, 5, 4096, false},
                       Case{Capture::automatic, 6, 512, true}, Case{Capture::automatic, 5, 16383, false},
                       Case{Capture::automatic, 5, 16384, true}, Case{Capture::automatic, 3, 16384, true},
                       Case{Capture::required, 5, 2, true}, Case{Capture::required, 3, 2, true}}) {
    const std::string what = std::to_string(c.steps) + " steps of " + std::to_string(c.width) +
                             (c.capture == Capture::required ? ", required" : "");
    const Var w = tape.variable(init(3, {c.width}));
    const StepFn step = [&](S a) -> StepResult {
      ++calls;
      return a[0] + a[1] * w;
    };
    calls = 0;
    const ScanResult r = running_sum(step, c.capture, c.steps, c.width);
    EXPECT_EQ(r.capture.captured, c.captured) << what << ": " << r.capture.reason;
    EXPECT_EQ(calls, c.captured ? 2 : c.steps) << what;  // a captured loop calls it twice only
    if (!c.captured) {
      EXPECT_EQ(r.capture.reason, "the loop is too small for capture to pay (" + std::to_string(c.steps) +
                                      " steps of values of at most " + std::to_string(c.width) + " elements)");
    }
    // Either way h_t = x_t + h_{t-1} w, the same operations in the same order as this loop.
    const std::vector<double> xs = testing::values(init(9, {c.steps, c.width}, 1.0)), wv = testing::values(w.value());
    const auto n = static_cast<std::size_t>(c.width);
    std::vector<double> h(n, 0.0);
    for (std::size_t t = 0; t < static_cast<std::size_t>(c.steps); ++t)
      for (std::size_t j = 0; j < n; ++j) h[j] = xs[n * t + j] + h[j] * wv[j];
    EXPECT_EQ(testing::values(index(r[0], 0, c.steps - 1).value()), h) << what;
  }
}

// On a full tape, a captured step keeps no buffer that no backward rule reads: each step's
// product with h (only the gates' sums read it) and the input product over every step (read
// by rows, then sums). Recorded, the same loop holds both. The bytes held go down by their
// size, and the values and gradients are those of the recorded loop (the cells' tests above).
// The chain of the gates keeps four of the five values its rules read (i, f, g and o; tanh c'
// is made again in backward from f, c, i and g, as the fused layer does), not h' and c',
// which live in the stacked outputs.
TEST(ScanCapture, BuffersNoRuleReadsAreNotHeld) {
  const CellCase c = cells()[0];  // lstm_merged: a [B, 4H] product per step, a [T, B, 4H] one before
  auto bytes_of = [](const MemoryReport& report, const std::string& op) {
    for (const OpMemory& m : report.ops)
      if (m.name == op) return m.bytes;
    return std::size_t{0};
  };
  const testing::LoopNodeScope per_op(false);  // the steps' own nodes (the one-node loop: below)
  MemoryReport reports[2];
  for (const Capture capture : {Capture::off, Capture::required}) {
    Tape tape;
    const CellInputs in = make_inputs(tape, c);
    const ScanResult r = scan_cell(c, in, capture);
    reports[capture == Capture::required] = tape.memory_report();
    tape.backward(sum(r[0]));  // and backward runs on what is left
    EXPECT_TRUE(in.params[1].grad().defined());
  }
  const std::size_t per_step = kB * 4 * kH * sizeof(double), sequence = kT * per_step;
  EXPECT_GE(bytes_of(reports[0], "matmul"), kT * 2 * per_step);  // recorded: two products per step
  EXPECT_EQ(bytes_of(reports[1], "scan_step_matmul"), 0u);
  EXPECT_EQ(bytes_of(reports[1], "matmul"), 0u);  // the pushed-out x W, [T, B, 4H]
  EXPECT_EQ(bytes_of(reports[1], "scan_elementwise_chain"), kT * 4 * kB * kH * sizeof(double));
  // h' and c' of every step, held once: the steps' nodes are views of the stacked outputs.
  EXPECT_EQ(bytes_of(reports[1], "stack"), 2 * kT * kB * kH * sizeof(double));
  EXPECT_LE(reports[1].held_bytes + (kT - 2) * per_step + sequence, reports[0].held_bytes)
      << "captured:\n" << reports[1].to_string() << "\nrecorded:\n" << reports[0].to_string();
}

// A captured full tape writes each step's outputs into their rows of the stacked results as
// it goes: the step's own buffers are used again by the next step instead of waiting, one
// per step and output, in the allocator's pool until the loop ends (which raised the peak by
// the size of every stacked output). The results are views of those buffers, equal to the
// recorded loop's (values to the bit).
TEST(ScanCapture, StepOutputsAreWrittenIntoTheStackedResultsAsTheLoopGoes) {
  constexpr std::int64_t steps = 400, batch = 3, hidden = 5;  // long enough to dwarf the trial's own buffers
  Tensor values[2], grads[2];
  for (const Capture capture : {Capture::off, Capture::required}) {
    Tape tape;
    const Var w = tape.variable(init(1, {hidden, hidden})), xs = tape.variable(init(2, {steps, batch, hidden}));
    const Var h0 = tape.constant(zeros({batch, hidden}, f64));
    memory::trim_pool();
    // Two stacked outputs: the state h' and u = h' * x.
    const ScanResult r = scan(
        [](S a) -> StepResult {
          const Var h = tanh(matmul(a[1], a[2]) + a[0]);
          return {h, h * a[0]};
        },
        {.sequences = {xs}, .outputs_info = {h0, OutputInfo()}, .non_sequences = {w}, .capture = capture});
    const std::size_t cached = memory::pool_stats().cached_bytes;
    if (capture == Capture::required) {
      ASSERT_TRUE(r.capture.captured) << r.capture.reason;
      EXPECT_LT(cached, steps * batch * hidden * sizeof(double)) << "the steps' own output buffers are left in the pool";
      for (int k : {0, 1}) EXPECT_EQ(r[k].value().nbytes(), r[k].value().storage()->bytes());  // the buffer, whole
    }
    tape.backward(sum(r[0]) + sum(r[1]));
    auto flat = [](const Tensor& t) { return t.view({t.numel()}); };
    values[capture == Capture::required] = concat({flat(r[0].value()), flat(r[1].value())});
    grads[capture == Capture::required] = concat({flat(w.grad()), flat(xs.grad())});
  }
  EXPECT_TRUE(testing::same_bytes(values[0], values[1]));
  EXPECT_LE(relative_error(grads[0], grads[1]), 1e-12);  // w's gradient: batched over the steps
}

// A chain whose main output its own rule reads (h' = tanh(...): tanh's derivative is 1 - h'^2)
// reads it from the step's node, which points into the stacked result: the chain holds no copy.
TEST(ScanCapture, AChainReadsItsMainOutputFromTheStackedResult) {
  constexpr std::int64_t steps = 9, batch = 3, hidden = 4;
  Tensor values[2], grads[2];
  for (const Capture capture : {Capture::off, Capture::required}) {
    Tape tape;
    const Var w = tape.variable(init(1, {hidden, hidden})), g = tape.variable(init(2, {hidden}));
    const Var b = tape.variable(init(3, {hidden})), xs = tape.variable(init(4, {steps, batch, hidden}));
    const ScanResult r = scan([](S a) -> StepResult { return tanh(matmul(a[1], a[2]) + a[0] - a[3] + a[4]); },
                              {.sequences = {xs},
                               .outputs_info = {tape.constant(zeros({batch, hidden}, f64))},
                               .non_sequences = {w, g, b},
                               .capture = capture});
    if (capture == Capture::required) {
      ASSERT_TRUE(r.capture.captured) << r.capture.reason;
      EXPECT_EQ(r.capture.fused_chains, 1) << "the step's elementwise ops were not fused";
      const MemoryReport report = tape.memory_report();
      bool listed = false;
      for (const OpMemory& m : report.ops) {
        if (m.name != "scan_elementwise_chain") continue;
        listed = true;
        EXPECT_EQ(m.bytes, 0u) << report.to_string();
      }
      EXPECT_TRUE(listed) << report.to_string();
    }
    tape.backward(sum(r[0] * r[0]));
    values[capture == Capture::required] = r[0].value();
    grads[capture == Capture::required] = concat({w.grad().view({hidden * hidden}), g.grad(), b.grad()});
  }
  EXPECT_TRUE(testing::same_bytes(values[0], values[1]));
  EXPECT_LE(relative_error(grads[0], grads[1]), 1e-12);
}

// The step function runs twice and the captured loop drops those calls: a Var the function
// kept (to look at later) names a node that is gone, its place taken by another. Reading it
// throws TapeError saying so, instead of giving that other node's value. Recorded step by
// step, the same Vars are each step's values.
TEST(ScanCapture, VarsKeptFromInsideTheStepAreRefusedOnceTheLoopIsCaptured) {
  for (const Capture capture : {Capture::required, Capture::off}) {
    Tape tape;
    const Var w = tape.variable(init(1, {3, 3}));
    std::vector<Var> kept;
    const ScanResult r = scan(
        [&](S a) -> StepResult {
          const Var p = matmul(a[1], a[2]);
          kept.push_back(p);
          return {tanh(p + a[0])};
        },
        {.sequences = {tape.constant(init(2, {6, 2, 3}))},
         .outputs_info = {tape.constant(zeros({2, 3}, f64))},
         .non_sequences = {w},
         .capture = capture});
    if (capture == Capture::required) {
      ASSERT_EQ(kept.size(), 2u);
      for (const Var& v : kept) {
        EXPECT_THROW((void)v.value(), TapeError);
        EXPECT_THROW((void)(v + 1.0), TapeError);
      }
    } else {
      ASSERT_EQ(kept.size(), 6u);
      const Var h1 = index(r[0], 0, 1);  // step 2's product is h_1 w
      EXPECT_TRUE(testing::same_bytes(kept[2].value(), matmul(h1, w).value()));
    }
    tape.backward(sum(r[0]));  // the loop itself is unharmed
    EXPECT_TRUE(w.grad().defined());
  }
}

// A Shared updated by the step (Theano's updates) is read at the next step as its update.
TEST(ScanCapture, SharedUpdatesFeedTheNextStep) {
  Shared total(zeros({2}, f64), "total");
  Tensor result[2];
  for (int pass = 0; pass < 2; ++pass) {
    Tape tape;
    const Var w = tape.variable(init(4, {2}));
    const ScanResult r = running_sum(
        [&](S a) -> StepResult {
          const Var t = Var(total) + a[0] * w;
          return {{a[1] + t}, Updates{{total, t}}};
        },
        pass == 0 ? Capture::required : Capture::off);
    EXPECT_EQ(r.capture.captured, pass == 0) << r.capture.reason;
    result[pass] = r.updates[total].value();
    tape.backward(sum(r[0]) + sum(r.updates[total]));
    EXPECT_TRUE(testing::same_bytes(w.grad(), w.grad()));
    result[pass] = concat({result[pass], w.grad()});
  }
  EXPECT_TRUE(testing::same_bytes(result[0], result[1]));
}

// Steps whose values a first capture took for constants or whose gradients it let through,
// each against the recorded path (values and every gradient within 1e-12).
TEST(ScanCapture, MasksDetachNoGradAndDeadCodeReplayAsRecorded) {
  const FusingChains fusing(true);  // the dead chain below is left unfused
  // xs: the first two steps positive, then negative: a mask fixed at the first steps would be wrong.
  Tensor xs = init(21, {6, 2, 3}, 1.0);
  for (std::int64_t i = 0; i < xs.numel(); ++i) {
    double* p = xs.data<double>();
    p[i] = (i < 12 ? 1.0 : -1.0) * (std::abs(p[i]) + 0.1);
  }
  const std::vector<std::pair<std::string, std::function<StepResult(S, const Var&)>>> steps{
      {"leaky relu by a mask", [](S a, const Var& w) -> StepResult {
         const Var pre = a[0] + matmul(a[1], w);
         return where(greater(pre, scalar_like(pre, 0.0)), pre, pre * 0.1) * 0.5;
       }},
      {"detach", [](S a, const Var& w) -> StepResult { return tanh(a[0] + matmul(a[1], w)) + detach(a[1]) * 0.25; }},
      {"NoGrad inside", [](S a, const Var& w) -> StepResult {
         Var gate;
         {
           NoGrad off;
           gate = sigmoid(matmul(a[1], w));
         }
         return tanh(a[0] + matmul(a[1], w)) * gate;
       }},
      {"dead code", [](S a, const Var& w) -> StepResult {
         const Var unused = sigmoid(a[0] * 2.0 + 1.0) * a[0];
         (void)unused;
         return tanh(a[0] + matmul(a[1], w));
       }},
  };
  for (const auto& [name, step] : steps) {
    Tensor got[2][3];
    StepCapture path;
    for (int pass = 0; pass < 2; ++pass) {
      Tape tape;
      const Var w = tape.variable(init(22, {3, 3})), x = tape.variable(xs), h0 = tape.variable(init(23, {2, 3}));
      const ScanResult r = scan([&](S a) { return step(a, w); },
                                {.sequences = {x}, .outputs_info = {h0}, .capture = pass == 0 ? Capture::required : Capture::off});
      if (pass == 0) path = r.capture;
      got[pass][0] = r[0].value();
      tape.backward(sum(r[0] * r[0]));
      got[pass][1] = w.grad();
      got[pass][2] = concat({x.grad().view({x.grad().numel()}), h0.grad().view({h0.grad().numel()})});
    }
    EXPECT_TRUE(path.captured) << name << ": " << path.reason;
    for (int k = 0; k < 3; ++k) EXPECT_LE(relative_error(got[0][k], got[1][k]), 1e-12) << name << " result " << k;
  }
}

// A Var read from a Shared before the loop and held by the step, while the step updates
// that Shared: the step reads the old value at every step, not the update (the capture,
// required so that a loop this small is looked at, sees the two calls differ and records).
TEST(ScanCapture, AHeldReadOfAnUpdatedSharedIsNotTakenForARead) {
  Shared total(zeros({2}, f64), "total");
  Tensor result[2];
  for (int pass = 0; pass < 2; ++pass) {
    total.assign(zeros({2}, f64));
    Tape tape;
    const Var held = Var(total);
    const ScanResult r = running_sum(
        [&](S a) -> StepResult { return {{a[1] + held}, Updates{{total, held + a[0]}}}; },
        pass == 0 ? Capture::required : Capture::off);
    if (pass == 0) {  // the capture looked at both calls and saw that they read different values
      EXPECT_FALSE(r.capture.captured);
      EXPECT_EQ(r.capture.reason, "op 0 (add) reads other values at the next step");
    }
    result[pass] = concat({r[0].value().view({r[0].value().numel()}), r.updates[total].value()});
  }
  EXPECT_TRUE(testing::same_bytes(result[0], result[1]));
}

// JAX's face with a pytree carry, and ONNX's Scan: captured like Theano's.
TEST(ScanCapture, EveryFaceCaptures) {
  Tape tape;
  const Var xs = tape.constant(init(5, {6, 2}, 1.0)), w = tape.variable(init(6, {2}));
  using Carry = std::pair<Var, Var>;
  const auto [carry, ys] = jax::scan(
      [&](const Carry& c, const Var& x) { return std::pair{Carry{c.first + x * w, c.second * 0.5 + c.first}, c.first}; },
      Carry{tape.constant(zeros({2}, f64)), tape.constant(ones({2}, f64))}, xs, {.capture = Capture::required});
  EXPECT_EQ(tape.memory_report().regions.back().step, "captured");
  const OnnxScanResult onnx = onnx_scan([&](S a) { return std::vector<Var>{a[0] + a[1] * w, a[0]}; },
                                        {tape.constant(zeros({2}, f64))}, {xs}, {.capture = Capture::required});
  EXPECT_EQ(tape.memory_report().regions.back().step, "captured");
  EXPECT_TRUE(testing::same_bytes(onnx.final_states[0].value(), carry.first.value()));
}

// ---- a captured loop as one node (ops/scan/captured_loop_detail.hpp) ---------------------

// A cell's run with the loop as one node or replayed a node per op and step, and what the
// memory report says of its steps.
struct NodeRun {
  CellRun run;
  std::string step;
  std::size_t held_bytes = 0, nodes = 0;
  std::string report;
};
NodeRun run_loop(const CellCase& c, bool one_node, ScanOptions extra = {}) {
  const testing::LoopNodeScope scope(one_node);
  Tape tape;
  const CellInputs in = make_inputs(tape, c);
  const ScanResult r = scan_cell(c, in, Capture::required, std::move(extra));
  const MemoryReport report = tape.memory_report();
  Var loss = tape.constant(scalar(0.0, f64));
  for (const Var& out : r.outputs) loss = loss + sum(out * out * out);
  NodeRun got{{loss.value(), {}, {}, r.capture}, report.regions.at(0).step, report.held_bytes,
              report.regions.at(0).nodes, report.to_string()};
  for (const Var& out : r.outputs) got.run.outputs.push_back(out.value());
  tape.backward(loss);
  for (const Var& p : in.params) got.run.grads.push_back(p.grad());
  for (const Var& s : in.states) got.run.grads.push_back(s.grad());
  got.run.grads.push_back(in.xs.grad());
  return got;
}

void expect_same_bits(const CellRun& got, const CellRun& want, const std::string& what) {
  EXPECT_TRUE(testing::same_bytes(got.loss, want.loss)) << what << " loss";
  ASSERT_EQ(got.outputs.size(), want.outputs.size()) << what;
  for (std::size_t j = 0; j < got.outputs.size(); ++j)
    EXPECT_TRUE(testing::same_bytes(got.outputs[j], want.outputs[j])) << what << " output " << j;
  ASSERT_EQ(got.grads.size(), want.grads.size()) << what;
  for (std::size_t k = 0; k < got.grads.size(); ++k)
    EXPECT_TRUE(testing::same_bytes(got.grads[k], want.grads[k])) << what << " gradient " << k;
}

// Every cell, fused or not: the loop as one node gives the per-op replay's values and
// gradients to the bit (the same ops in the same order, each gradient share added where and
// when the tape adds it), in one node on the tape, holding no more.
TEST(ScanCapture, ALoopAsOneNodeEqualsThePerOpReplayToTheBit) {
  for (const bool fuse : {false, true}) {
    const FusingChains fusing(fuse);
    for (const CellCase& c : cells()) {
      const std::string what = c.name + (fuse ? " fused" : "");
      const NodeRun one = run_loop(c, true), per_op = run_loop(c, false);
      // All products and chains, unless the process runs no loop planned.
      const bool planned = fuse && c.name != "two_layers" && scan_engine::detail::planned_loop_switch();
      EXPECT_EQ(one.step, planned ? "captured, one node, planned" : "captured, one node") << what;
      EXPECT_EQ(per_op.step, "captured") << what;
      // The work before the loop, then one node (and one per further output) instead of a
      // node per op at every step.
      EXPECT_LT(one.nodes + 2 * kT, per_op.nodes) << what;
      EXPECT_LE(one.held_bytes, per_op.held_bytes)
          << what << "\none node:\n" << one.report << "\nper op:\n" << per_op.report;
      expect_same_bits(one.run, per_op.run, what);
      expect_same(one.run, unrolled(c), what + " against a plain loop");
    }
  }
}

// Where the loop cannot run as one node it replays its program a node per op and step, as
// before: truncated gradients, lengths, a checkpoint policy, blocks of pushed-out work.
TEST(ScanCapture, ALoopRunsAsOneNodeOnlyWhereItCan) {
  const CellCase c = cells()[0];
  EXPECT_EQ(run_loop(c, true).step,
            scan_engine::detail::planned_loop_switch() ? "captured, one node, planned" : "captured, one node");
  EXPECT_EQ(run_loop(c, true, {.truncate_gradient = 3}).step, "captured");
  EXPECT_EQ(run_loop(c, true, {.checkpoint = Checkpoint::every_k(2)}).step, "captured");
  EXPECT_EQ(run_loop(c, true, {.lengths = SequenceLengths{7, 3, 5}}).step, "captured");
  scan_engine::detail::set_rewrite_switches({.pushed_rows = kB * 2});  // blocks of two steps
  const NodeRun blocks = run_loop(c, true);
  scan_engine::detail::set_rewrite_switches({});
  EXPECT_EQ(blocks.step, "captured");
  expect_same_bits(run_loop(c, true, {.truncate_gradient = 3}).run, run_loop(c, false, {.truncate_gradient = 3}).run,
                   "truncated");
}

// A weight read by two loops and by the loss: each loop hands its steps' shares of the
// weight's gradient over one by one (GradSink::add), so the sum has the per-op replay's order.
TEST(ScanCapture, ALoopAsOneNodeAddsEachStepsShareInTheTapesOrder) {
  Tensor grads[2];
  for (const bool one_node : {true, false}) {
    const testing::LoopNodeScope scope(one_node);
    Tape tape;
    const Var w = tape.variable(init(3, {kH})), u = tape.variable(init(4, {kH, kH}));
    const Var xs = tape.variable(init(5, {kT, kB, kH}, 1.0));
    auto step = [&](S a) -> StepResult { return {tanh(a[0] * w + matmul(a[1], u) * w)}; };
    Var loss = sum(w * w);
    for (int layer = 0; layer < 2; ++layer) {
      const ScanResult r = scan(step, {.sequences = {xs}, .outputs_info = {Var(zeros({kB, kH}, f64))},
                                       .capture = Capture::required});
      loss = loss + sum(r[0] * r[0] * r[0]);
    }
    tape.backward(loss);
    grads[one_node] = w.grad();
  }
  EXPECT_TRUE(testing::same_bytes(grads[1], grads[0]));
}

// Gradients of gradients through the loop as one node (its backward records the steps' ops
// and differentiates them) equal the per-op replay's; a loop input that also takes gradient
// from other nodes gets the loop's shares summed first, so they agree to rounding.
TEST(ScanCapture, ALoopAsOneNodeHasGradientsOfGradients) {
  for (const CellCase& c : cells()) {
    Tensor second[2];
    for (const bool one_node : {true, false}) {
      const testing::LoopNodeScope scope(one_node);
      Tape tape;
      const CellInputs in = make_inputs(tape, c);
      const ScanResult r = scan_cell(c, in, Capture::required);
      Var loss = tape.constant(scalar(0.0, f64));
      for (const Var& out : r.outputs) loss = loss + sum(out * out * out);
      const Var g = grad(loss, in.params[1], {.create_graph = true});
      second[one_node] = grad(sum(g * g), in.params[0]).value();
    }
    EXPECT_LE(relative_error(second[1], second[0]), kGradientTolerance) << c.name;
    EXPECT_GT(relative_error(second[1], zeros(second[1].shape(), f64)), 1e-6) << c.name << ": a gradient reached";
  }
}

// ---- a loop node on planned buffers (ops/scan/planned_loop_detail.hpp) --------------------

// A cell's loop as one node, planned or not, in `dtype`. The loss reads every output, the
// first alone or the last alone (`loss_on`): with the first alone, the other carries' values
// get no gradient from outside, so their first share at each step comes from the next step's
// chain (written where it goes); with the last alone, the main output's gradient reaches the
// loop as zeros. `retain`: two backward passes.
enum class LossOn { every, first, last };
struct PlannedRun {
  CellRun run;
  std::uint64_t planned = 0;  // loops run planned
  std::size_t held_bytes = 0;
};
PlannedRun run_planned(const CellCase& c, bool planned, DType dtype, LossOn loss_on, bool retain) {
  const testing::LoopNodeScope node(true);
  const testing::PlannedLoopScope scope(planned);
  Tape tape;
  CellInputs in = make_inputs(tape, c);
  auto to = [&](Var& v) { v = tape.variable(v.value().to(dtype)); };
  for (Var& p : in.params) to(p);
  for (Var& s : in.states) to(s);
  to(in.xs);
  const std::uint64_t before = scan_engine::detail::planned_loop_runs();
  const ScanResult r = scan_cell(c, in, Capture::required);
  PlannedRun got;
  got.planned = scan_engine::detail::planned_loop_runs() - before;
  got.held_bytes = tape.memory_report().held_bytes;
  auto cube_sum = [](const Var& v) { return sum(v * v * v); };
  Var loss = cube_sum(loss_on == LossOn::first ? r.outputs.front() : r.outputs.back());
  if (loss_on == LossOn::every)
    for (std::size_t j = 0; j + 1 < r.outputs.size(); ++j) loss = loss + cube_sum(r.outputs[j]);
  got.run = {loss.value(), {}, {}, r.capture};
  for (const Var& out : r.outputs) got.run.outputs.push_back(out.value());
  for (int pass = 0; pass < (retain ? 2 : 1); ++pass) tape.backward(loss, {.retain_graph = retain});
  for (const Var& p : in.params) got.run.grads.push_back(p.grad());
  for (const Var& s : in.states) got.run.grads.push_back(s.grad());
  got.run.grads.push_back(in.xs.grad());
  return got;
}

// Every cell, fused or not, in float64 and float32, the loss on every output or one alone,
// one backward pass or two: planned, the loop node gives the values and gradients it gives
// running its ops itself, to the bit, and holds no more. The cells whose fused step is all
// products and chains run planned (two_layers' chains are too short to fuse; unfused, every
// step runs its ops one by one).
TEST(ScanCapture, APlannedLoopEqualsTheLoopNodeToTheBit) {
  for (const bool fuse : {false, true}) {
    const FusingChains fusing(fuse);
    for (const CellCase& c : cells())
      for (const DType dtype : {f64, DType::float32})
        for (const LossOn loss_on : {LossOn::every, LossOn::first, LossOn::last})
          for (const bool retain : {false, true}) {
            const std::string what = c.name + (fuse ? " fused " : " ") + (dtype == f64 ? "float64" : "float32") +
                                     (loss_on == LossOn::first ? " first output"
                                      : loss_on == LossOn::last ? " last output"
                                                                : "") +
                                     (retain ? " two passes" : "");
            const PlannedRun planned = run_planned(c, true, dtype, loss_on, retain);
            const PlannedRun node = run_planned(c, false, dtype, loss_on, retain);
            EXPECT_EQ(planned.planned, fuse && c.name != "two_layers" ? 1u : 0u) << what;
            EXPECT_EQ(node.planned, 0u) << what;
            EXPECT_LE(planned.held_bytes, node.held_bytes) << what;
            expect_same_bits(planned.run, node.run, what);
          }
  }
}

// A loop of one chain and no product: c' = tanh(c + x_t Wx) + sigmoid(c - x_t Wx), whose
// rules read no carried value (sums and differences do not, tanh and sigmoid read their own
// values). Kept as the last value only, c is in two reused rows (the step before's and this
// step's); stacked, in the output. Three steps and seven, float64 and float32: planned or not,
// the same bits.
TEST(ScanCapture, APlannedLoopOfAChainAloneKeepsWhatNoRuleReadsInTwoRows) {
  const FusingChains fusing(true);
  for (const Keep keep : {Keep::last, Keep::all})
    for (const std::int64_t steps : {std::int64_t{3}, kT})
      for (const DType dtype : {f64, DType::float32}) {
        const std::string what = std::string(keep == Keep::last ? "last" : "all") + " over " +
                                 std::to_string(steps) + (dtype == f64 ? " steps, float64" : " steps, float32");
        std::vector<Tensor> got[2];
        for (const bool planned : {false, true}) {
          const testing::LoopNodeScope node(true);
          const testing::PlannedLoopScope scope(planned);
          Tape tape;
          const Var xs = tape.variable(init(5, {steps, kB, kI}, 1.0).to(dtype));
          const Var wx = tape.variable(init(6, {kI, kH}).to(dtype));
          const Var c0 = tape.variable(init(7, {kB, kH}).to(dtype));
          auto step = [](S a) -> StepResult {
            const Var u = matmul(a[0], a[2]);
            return {tanh(a[1] + u) + sigmoid(a[1] - u)};
          };
          const std::uint64_t before = scan_engine::detail::planned_loop_runs();
          const ScanResult r = scan(step, {.sequences = {xs}, .outputs_info = {c0}, .non_sequences = {wx},
                                           .keep = keep, .capture = Capture::required});
          EXPECT_EQ(scan_engine::detail::planned_loop_runs() - before, planned ? 1u : 0u) << what;
          EXPECT_EQ(tape.memory_report().regions.back().step,
                    planned ? "captured, one node, planned" : "captured, one node")
              << what;
          const Var loss = sum(r[0] * r[0] * r[0]);
          tape.backward(loss);
          got[planned] = {r[0].value(), loss.value(), xs.grad(), wx.grad(), c0.grad()};
        }
        for (std::size_t k = 0; k < got[0].size(); ++k)
          EXPECT_TRUE(testing::same_bytes(got[1][k], got[0][k])) << what << ", value " << k;
      }
}

// Gradients asked of some inputs only (grad, not backward: the pass wants none of the
// others, the initial states' among them when the sequence's is asked): planned or not, the
// same bits.
TEST(ScanCapture, APlannedLoopGivesTheGradientsAskedForOnly) {
  const FusingChains fusing(true);
  for (const CellCase& c : cells()) {
    if (c.name == "two_layers") continue;  // not planned (its chains are too short to fuse)
    std::vector<Tensor> got[2];
    for (const bool planned : {true, false}) {
      const testing::LoopNodeScope node(true);
      const testing::PlannedLoopScope scope(planned);
      Tape tape;
      const CellInputs in = make_inputs(tape, c);
      const std::uint64_t before = scan_engine::detail::planned_loop_runs();
      const ScanResult r = scan_cell(c, in, Capture::required);
      EXPECT_EQ(scan_engine::detail::planned_loop_runs() - before, planned ? 1u : 0u) << c.name;
      const Var loss = sum(r[0] * r[0] * r[0]);
      for (const Var& wanted : {in.params[1], in.states[0], in.xs})
        got[planned].push_back(grad(loss, wanted).value());
    }
    for (std::size_t k = 0; k < got[0].size(); ++k)
      EXPECT_TRUE(testing::same_bytes(got[1][k], got[0][k])) << c.name << " gradient " << k;
  }
}

// Where the loop cannot run as one node it is not planned either; where it runs its ops
// itself (the switch off), nothing is planned.
TEST(ScanCapture, OnlyALoopAsOneNodeRunsPlanned) {
  const FusingChains fusing(true);
  const CellCase c = cells()[0];
  for (const bool planned : {true, false}) {
    const testing::PlannedLoopScope scope(planned);
    const std::uint64_t before = scan_engine::detail::planned_loop_runs();
    EXPECT_EQ(run_loop(c, true).step, planned ? "captured, one node, planned" : "captured, one node");
    EXPECT_EQ(scan_engine::detail::planned_loop_runs() - before, planned ? 1u : 0u);
    EXPECT_EQ(run_loop(c, true, {.truncate_gradient = 3}).step, "captured");
    EXPECT_EQ(run_loop(c, false).step, "captured");
    EXPECT_EQ(scan_engine::detail::planned_loop_runs() - before, planned ? 1u : 0u);
  }
}

}  // namespace
}  // namespace recur
