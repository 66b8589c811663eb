// A chain's backward passes, worked out once (elementwise_chain_passes_detail.hpp).
#include <recur/ops/scan/elementwise_chain_passes_detail.hpp>

#include <algorithm>

namespace recur::scan_engine::detail::chain {
namespace {

using Rule = recur::detail::ChainGrad;
using Kind = PassSource::Kind;

class PassMaker {
 public:
  PassMaker(const ChainProgram& p, ChainPasses& out)
      : p_(p), out_(out), n_code_(p.code.size()), written_(p.code.size() + p.slots.size(), 0) {}

  void operator()() {
    for (std::size_t o = 0; o < p_.outputs.size(); ++o)
      if (out_.defined[o]) {
        const std::size_t r = p_.outputs[o];
        if (out_.given[r] < 0)  // copied in
          out_.passes.push_back({Rule::copy, {}, false, written_[r] != 0, true, static_cast<std::uint32_t>(o), {}, {},
                                 {}, static_cast<std::uint32_t>(lives(r))});
        written_[r] = 1;
      }
    for (std::size_t k = n_code_; k-- > 0;) {
      if (!written_[k]) continue;  // no gradient reached this value
      const ChainInstruction& in = p_.code[k];
      gradient_ = static_cast<std::uint32_t>(lives(k));
      const PassSource y{Kind::value, {false, static_cast<std::uint16_t>(k)}};
      const PassSource a{Kind::operand, in.a}, b{Kind::operand, in.b};
      switch (in.code) {
        case ChainCode::add:
          add(in.a, Rule::copy);
          add(in.b, Rule::copy);
          break;
        case ChainCode::sub:
          add(in.a, Rule::copy);
          add(in.b, Rule::negate);
          break;
        case ChainCode::mul:
          add(in.a, Rule::times, b);
          add(in.b, Rule::times, a);
          break;
        case ChainCode::div:  // d(a/b) = g/b, -g y/b
          add(in.a, Rule::divide, b);
          add(in.b, Rule::divisor, y, b);
          break;
        default: {  // one operand
          const auto [rule, reads] = own_rule(k);
          add(in.a, rule, reads);
        }
      }
    }
    for (std::size_t j = 0; j < p_.slots.size(); ++j) {
      out_.slot_register.push_back(static_cast<std::uint32_t>(lives(n_code_ + j)));
      out_.slot_written.push_back(written_[n_code_ + j]);
    }
  }

 private:
  bool needs(const ChainOperand& o) const { return !o.is_input || out_.needs[p_.slots[o.index].input]; }

  // The register r's gradient lives in: its own, or the one it reads instead of a copy
  // (ChainProgram::gradient_copy_of): a slot only where its input's gradient is summed over
  // slots (one written in place is that gradient).
  std::size_t lives(std::size_t r) const {
    const std::int32_t of = p_.gradient_copy_of[r];
    if (of < 0) return r;
    if (r >= n_code_) {
      const std::uint16_t in = p_.slots[r - n_code_].input;
      if (!out_.needs[in] || out_.writes[in] != Writes::sum) return r;
    }
    return static_cast<std::size_t>(of);
  }

  // Instruction k's own rule when it has one operand: d(-x) = -g, d tanh x = g (1 - y^2),
  // d sigmoid x = g y (1 - y), d e^x = g y, d relu x = x > 0 ? g : 0; and what it reads.
  std::pair<Rule, PassSource> own_rule(std::size_t k) const {
    const PassSource y{Kind::value, {false, static_cast<std::uint16_t>(k)}};
    switch (p_.code[k].code) {
      case ChainCode::neg: return {Rule::negate, {}};
      case ChainCode::tanh: return {Rule::tanh, y};
      case ChainCode::sigmoid: return {Rule::sigmoid, y};
      case ChainCode::exp: return {Rule::times, y};
      default: return {Rule::relu, {Kind::operand, p_.code[k].a}};  // relu
    }
  }

  // Operand o's share of the current instruction's gradient by `rule` (reading u and v), when
  // it wants a gradient. A folded operand (ChainProgram::folded) hands that share on by its
  // own rule at once, into its own operand's register.
  void add(const ChainOperand& o, Rule rule, PassSource u = {}, PassSource v = {}) {
    if (!o.is_input && p_.folded[o.index]) {
      const ChainInstruction& f = p_.code[o.index];
      if (!needs(f.a)) return;
      const std::size_t r = register_of(f.a, n_code_);
      const auto [then, reads] = own_rule(o.index);
      out_.passes.push_back({rule, then, true, written_[r] != 0, false, gradient_, u, v, reads,
                             static_cast<std::uint32_t>(lives(r))});
      written_[r] = 1;
      return;
    }
    if (!needs(o)) return;
    const std::size_t r = register_of(o, n_code_);
    if (lives(r) == r)  // else its one share is the gradient itself, read where it is
      out_.passes.push_back({rule, {}, false, written_[r] != 0, false, gradient_, u, v, {}, static_cast<std::uint32_t>(r)});
    written_[r] = 1;
  }

  const ChainProgram& p_;
  ChainPasses& out_;
  std::size_t n_code_;
  Flags written_;  // per register: a share reached it
  std::uint32_t gradient_ = 0;
};

bool made_for(const ChainPasses& c, const ChainLayout& layout, std::span<const std::uint8_t> needs, const Flags& defined) {
  return std::equal(layout.writes.begin(), layout.writes.end(), c.writes.begin(), c.writes.end()) &&
         std::equal(needs.begin(), needs.end(), c.needs.begin(), c.needs.end()) && c.defined == defined;
}

std::shared_ptr<const ChainPasses> make_passes(const ChainProgram& p, const ChainLayout& layout,
                                               std::span<const std::uint8_t> needs, const Flags& defined) {
  auto made = std::make_shared<ChainPasses>();
  made->writes = layout.writes;
  made->needs.assign(needs.begin(), needs.end());
  made->defined = defined;
  made->given.assign(p.code.size(), -1);
  for (std::size_t o = 0; o < p.outputs.size(); ++o)
    if (defined[o] && p.output_not_operand[o]) made->given[p.outputs[o]] = static_cast<std::int32_t>(o);
  PassMaker(p, *made)();
  return made;
}

}  // namespace

const ChainPasses& passes_of(const ChainProgram& p, const ChainLayout& layout, std::span<const std::uint8_t> needs,
                             const Flags& defined, std::shared_ptr<const ChainPasses>& hold) {
  return p.passes.get([&](const ChainPasses& c) { return made_for(c, layout, needs, defined); },
                      [&] { return make_passes(p, layout, needs, defined); }, hold);
}

}  // namespace recur::scan_engine::detail::chain
