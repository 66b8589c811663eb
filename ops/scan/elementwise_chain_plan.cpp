// What an elementwise chain's backward reads and how it hands gradients on
// (elementwise_chain_plan_detail.hpp).
#include <recur/ops/scan/elementwise_chain_plan_detail.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <vector>

namespace recur::scan_engine::detail::chain {
namespace {

using Flags = std::vector<std::uint8_t>;

// What the backward reads: per instruction, its value (the result of tanh, sigmoid, exp and
// div, whose derivatives are written with it, and the operands of mul, div and relu); per
// slot, the input it reads in place (such an operand that is an input). The others (sums,
// differences, negations) are not kept: a chain saves what a hand-fused cell saves, and a
// captured loop drops an input only a sum reads.
struct BackwardReads {
  std::vector<std::uint8_t> values, slots;
};
BackwardReads read_by_backward(const ChainProgram& p) {
  BackwardReads read{std::vector<std::uint8_t>(p.code.size(), 0), std::vector<std::uint8_t>(p.slots.size(), 0)};
  auto mark = [&](const ChainOperand& o) { (o.is_input ? read.slots : read.values)[o.index] = 1; };
  for (std::size_t k = 0; k < p.code.size(); ++k) {
    const ChainInstruction& in = p.code[k];
    switch (in.code) {
      case ChainCode::tanh: case ChainCode::sigmoid: case ChainCode::exp: read.values[k] = 1; break;
      case ChainCode::div: read.values[k] = 1; mark(in.b); break;
      case ChainCode::mul: mark(in.a); mark(in.b); break;
      case ChainCode::relu: mark(in.a); break;
      default: break;
    }
  }
  return read;
}

// Whether instruction k's value leaves the chain.
bool is_output(const ChainProgram& p, std::size_t k) {
  return std::find(p.outputs.begin(), p.outputs.end(), k) != p.outputs.end();
}

// The read values backward makes again instead of the forward keeping them: a tanh, sigmoid
// or exp (its rule reads its result) made by sums, differences, negations and products from
// kept values and read slots alone, as the fused LSTM makes tanh c' again from c. One
// transcendental per element in backward costs less than a row of memory per step held
// from forward to backward. Returns per instruction whether it is made again (the values and
// the sums and products they are made from); `keep` loses the values made again.
Flags made_again(const ChainProgram& p, const BackwardReads& read, Flags& keep) {
  const std::size_t n = p.code.size();
  Flags again(n, 0);
  auto cheap = [](ChainCode c) { return c == ChainCode::add || c == ChainCode::sub || c == ChainCode::mul || c == ChainCode::neg; };
  // Whether operand o can be made from what backward holds; the cheap values it needs go to `need`.
  std::function<bool(const ChainOperand&, Flags&)> makeable = [&](const ChainOperand& o, Flags& need) {
    if (o.is_input) return read.slots[o.index] != 0;
    const std::size_t j = o.index;
    if (keep[j] || again[j] || need[j]) return true;
    if (!cheap(p.code[j].code)) return false;
    need[j] = 1;
    return makeable(p.code[j].a, need) && (unary(p.code[j].code) || makeable(p.code[j].b, need));
  };
  for (std::size_t k = 0; k < n; ++k) {
    const ChainCode c = p.code[k].code;
    if (!keep[k] || is_output(p, k) || (c != ChainCode::tanh && c != ChainCode::sigmoid && c != ChainCode::exp)) continue;
    Flags need(n, 0);
    if (!makeable(p.code[k].a, need)) continue;
    keep[k] = 0;
    again[k] = 1;
    for (std::size_t j = 0; j < n; ++j) again[j] = again[j] || need[j];
  }
  return again;
}

// ChainProgram::gradient_copy_of and output_not_operand. Backward visits instructions last
// first, so a reader names the register its own gradient lives in (itself, or the one it copies).
void find_gradient_copies(ChainProgram& p) {
  const std::size_t n_code = p.code.size();
  auto reg = [&](const ChainOperand& o) { return register_of(o, n_code); };
  std::vector<std::uint16_t> shares(n_code + p.slots.size(), 0);
  for (std::uint16_t k : p.outputs) ++shares[k];
  for (const ChainInstruction& in : p.code) {
    ++shares[reg(in.a)];
    if (!unary(in.code)) ++shares[reg(in.b)];
  }
  p.gradient_copy_of.assign(shares.size(), -1);
  for (std::size_t k = n_code; k-- > 0;) {
    const ChainInstruction& in = p.code[k];
    const std::int32_t lives = p.gradient_copy_of[k] >= 0 ? p.gradient_copy_of[k] : static_cast<std::int32_t>(k);
    auto copied_into = [&](const ChainOperand& o) {
      if (shares[reg(o)] == 1) p.gradient_copy_of[reg(o)] = lives;
    };
    if (in.code == ChainCode::add || in.code == ChainCode::sub) copied_into(in.a);  // d(a ± b)/da = 1
    if (in.code == ChainCode::add) copied_into(in.b);
  }
  p.output_not_operand.clear();
  for (std::uint16_t k : p.outputs) p.output_not_operand.push_back(shares[k] == 1);  // read by none, listed once
}

// ChainProgram::folded (after find_gradient_copies). Instruction k's share, folded, is added
// into its operand's register when its reader j runs instead of when k would: so no
// instruction between them (j included) may add a share to that register. A reader that is
// folded itself never runs: k is then not folded (decided last first, j before k).
void find_folded_rules(ChainProgram& p) {
  const std::size_t n_code = p.code.size();
  auto reg = [&](const ChainOperand& o) { return register_of(o, n_code); };
  auto reads = [&](const ChainInstruction& in, std::size_t r) { return reg(in.a) == r || (!unary(in.code) && reg(in.b) == r); };
  p.folded.assign(n_code, 0);
  for (std::size_t k = n_code; k-- > 0;) {
    if (!unary(p.code[k].code) || is_output(p, k) || p.gradient_copy_of[k] >= 0) continue;
    std::size_t readers = 0, j = 0;
    for (std::size_t m = k + 1; m < n_code; ++m) {
      const ChainInstruction& in = p.code[m];
      const std::size_t times = (reg(in.a) == k) + (!unary(in.code) && reg(in.b) == k);
      if (times) j = m;
      readers += times;
    }
    if (readers != 1 || p.folded[j]) continue;
    const std::size_t target = reg(p.code[k].a);
    bool order_kept = true;
    for (std::size_t m = k + 1; m <= j; ++m) order_kept = order_kept && !reads(p.code[m], target);
    p.folded[k] = order_kept;
  }
}

}  // namespace

void plan_backward(ChainProgram& p) {
  BackwardReads read = read_by_backward(p);
  Flags keep(read.values.begin(), read.values.end());
  const Flags again = made_again(p, read, keep);
  p.kept.clear();
  p.recomputed.clear();
  for (std::size_t k = 0; k < read.values.size(); ++k) {
    if (again[k]) p.recomputed.push_back(static_cast<std::uint16_t>(k));
    if (keep[k] && !is_output(p, k)) p.kept.push_back(static_cast<std::uint16_t>(k));
  }
  p.outputs_read.clear();
  for (std::uint16_t k : p.outputs) p.outputs_read.push_back(read.values[k]);
  p.slots_read = std::move(read.slots);
  find_gradient_copies(p);
  find_folded_rules(p);
}

}  // namespace recur::scan_engine::detail::chain
