// Elementwise chains of a captured step fused into one op each (step_rewrite_detail.hpp,
// elementwise_chain_detail.hpp).
#include <algorithm>
#include <memory>

#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/step_rewrite_detail.hpp>

namespace recur::scan_engine::detail {
namespace {

using Kind = ValueRef::Kind;

// How an operand of shape `s` meets a chain of shape `chain`: 0 when it cannot (it is
// neither the chain's shape nor broadcast along leading axes), else its period in elements.
std::int64_t period_in(const Shape& s, const Shape& chain) {
  const std::int64_t n = numel(s), total = numel(chain);
  if (s == chain) return total;
  if (n == 1) return 1;
  if (n == 0 || total % n != 0) return 0;
  std::size_t lead = 0;  // leading 1s of s broadcast too
  while (lead < s.size() && s[lead] == 1) ++lead;
  const std::size_t rest = s.size() - lead;
  if (rest > chain.size() || !std::equal(s.begin() + lead, s.end(), chain.end() - rest)) return 0;
  return n;
}

class Fuser {
 public:
  Fuser(StepProgram& p, const std::function<Shape(const ValueRef&)>& shape_of) : p_(p), shape_of_(shape_of) {}

  int operator()() {
    find_groups();
    rebuild();
    return static_cast<int>(groups_.size());
  }

 private:
  Shape shape(const ValueRef& r) const {
    if (r.kind != Kind::local) return shape_of_(r);
    return r.output == 0 ? p_.ops[r.index].shape : Shape{-1};
  }
  // Op k's inputs fit a chain of its shape; its broadcast period (1 when none), or 0.
  std::int64_t fits(std::size_t k) const {
    const StepOp& op = p_.ops[k];
    const auto code = chain_code(op.op.name());
    if (!code || op.outputs != 1 || !op.op.elementwise() || !op.takes_gradient) return 0;
    if (op.inputs.size() != (*code >= ChainCode::neg ? 1u : 2u)) return 0;
    std::int64_t period = 1;
    const std::int64_t total = numel(op.shape);
    for (const ValueRef& r : op.inputs) {
      const std::int64_t q = period_in(shape(r), op.shape);
      if (q == 0 || (q != 1 && q != total && period != 1 && q != period)) return 0;
      if (q != 1 && q != total) period = q;
    }
    return period;
  }

  // A chain gains when it saves passes over memory that cost more than its own: three ops or
  // more, one of them tanh, sigmoid or exp. (A chain of adds alone is a loss: add's rule passes
  // its gradient on without a copy, where the chain writes every input's.)
  bool worth_fusing(const std::vector<std::size_t>& g) const {
    return g.size() >= 3 && std::any_of(g.begin(), g.end(), [&](std::size_t k) {
             const ChainCode c = *chain_code(p_.ops[k].op.name());
             return c == ChainCode::tanh || c == ChainCode::sigmoid || c == ChainCode::exp;
           });
  }

  // Greedy, in program order: an op joins the open chain when it has the chain's shape and
  // broadcast period; an op outside that reads the chain closes it (the fused op takes the
  // place of the chain's last op, so nothing between may need its values).
  void find_groups() {
    std::vector<std::size_t> open;
    std::int64_t open_period = 1;
    auto close = [&] {
      if (worth_fusing(open)) groups_.push_back(open);
      open.clear();
      open_period = 1;
    };
    for (std::size_t k = 0; k < p_.ops.size(); ++k) {
      const std::int64_t period = fits(k);
      const bool same = !open.empty() && p_.ops[k].shape == p_.ops[open.front()].shape &&
                        (period == 1 || open_period == 1 || period == open_period);
      if (period > 0 && same) {
        open.push_back(k);
        if (period != 1) open_period = period;
        continue;
      }
      const bool reads_open = std::any_of(p_.ops[k].inputs.begin(), p_.ops[k].inputs.end(), [&](const ValueRef& r) {
        return r.kind == Kind::local && std::find(open.begin(), open.end(), r.index) != open.end();
      });
      if (period > 0 || reads_open) close();
      if (period > 0) {
        open.push_back(k);
        open_period = period;
      }
    }
    close();
  }

  // Whether op k's value is read outside its group g.
  bool escapes(std::size_t k, const std::vector<std::size_t>& g) const {
    auto outside_reads = [&](const ValueRef& r) { return r.kind == Kind::local && r.index == k; };
    for (std::size_t j = 0; j < p_.ops.size(); ++j)
      if (std::find(g.begin(), g.end(), j) == g.end() &&
          std::any_of(p_.ops[j].inputs.begin(), p_.ops[j].inputs.end(), outside_reads))
        return true;
    return std::any_of(p_.outputs.begin(), p_.outputs.end(), outside_reads) ||
           std::any_of(p_.updates.begin(), p_.updates.end(), [&](const auto& u) { return outside_reads(u.second); }) ||
           std::any_of(p_.implicit_updates.begin(), p_.implicit_updates.end(),
                       [&](const auto& u) { return outside_reads(u.second); });
  }

  void rebuild() {
    // A chain none of whose values is read after it (dead code of the step) stays as it is.
    std::erase_if(groups_, [&](const std::vector<std::size_t>& g) {
      return std::none_of(g.begin(), g.end(), [&](std::size_t k) { return escapes(k, g); });
    });
    std::vector<int> group_of(p_.ops.size(), -1);
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (std::size_t k : groups_[g]) group_of[k] = static_cast<int>(g);
    std::vector<std::vector<ValueRef>> mapped(p_.ops.size());  // per old op: its outputs' new refs
    auto map = [&](const ValueRef& r) { return r.kind == Kind::local ? mapped[r.index][r.output] : r; };
    std::vector<StepOp> ops;
    for (std::size_t k = 0; k < p_.ops.size(); ++k) {
      const int g = group_of[k];
      if (g >= 0 && k != groups_[g].back()) continue;  // made with its chain's last op
      if (g < 0) {
        StepOp op = std::move(p_.ops[k]);
        for (ValueRef& r : op.inputs) r = map(r);
        for (std::uint8_t o = 0; o < op.outputs; ++o)
          mapped[k].push_back({Kind::local, static_cast<std::uint32_t>(ops.size()), o});
        ops.push_back(std::move(op));
        continue;
      }
      ops.push_back(fused(groups_[g], mapped, map, static_cast<std::uint32_t>(ops.size())));
    }
    p_.ops = std::move(ops);
    for (ValueRef& r : p_.outputs) r = map(r);
    for (auto& u : p_.updates) u.second = map(u.second);
    for (auto& u : p_.implicit_updates) u.second = map(u.second);
  }

  template <class Map>
  StepOp fused(const std::vector<std::size_t>& g, std::vector<std::vector<ValueRef>>& mapped, Map& map,
               std::uint32_t at) {
    auto chain = std::make_shared<ChainProgram>();
    chain->shape = p_.ops[g.back()].shape;
    StepOp op{{}, {}, 0, chain->shape};
    std::vector<bool> leaves(g.size());
    for (std::size_t i = 0; i < g.size(); ++i) leaves[i] = escapes(g[i], g);
    for (std::size_t i = 0; i < g.size(); ++i) {
      StepOp& member = p_.ops[g[i]];
      ChainInstruction in{*chain_code(member.op.name()), {}, {}};
      for (std::size_t o = 0; o < member.inputs.size(); ++o) {
        const ValueRef& r = member.inputs[o];
        ChainOperand operand;
        const auto inside = std::find(g.begin(), g.end(), r.kind == Kind::local ? r.index : SIZE_MAX);
        if (inside != g.end()) {
          operand = {false, static_cast<std::uint16_t>(inside - g.begin())};
        } else {
          const ValueRef outer = map(r);
          auto it = std::find(op.inputs.begin(), op.inputs.end(), outer);
          if (it == op.inputs.end()) it = op.inputs.insert(op.inputs.end(), outer);
          operand = {true, static_cast<std::uint16_t>(it - op.inputs.begin())};
        }
        (o == 0 ? in.a : in.b) = operand;
      }
      chain->code.push_back(in);
      chain->ops.push_back(std::move(member.op));
      mapped[g[i]].assign(1, ValueRef{});
      if (leaves[i]) {
        mapped[g[i]][0] = {Kind::local, at, op.outputs};
        chain->outputs.push_back(static_cast<std::uint16_t>(i));
        ++op.outputs;
      }
    }
    op.op = elementwise_chain_op(std::move(chain));
    return op;
  }

  StepProgram& p_;
  const std::function<Shape(const ValueRef&)>& shape_of_;
  std::vector<std::vector<std::size_t>> groups_;
};

}  // namespace

int fuse_elementwise(StepProgram& program, const std::function<Shape(const ValueRef&)>& shape_of) {
  return Fuser(program, shape_of)();
}

}  // namespace recur::scan_engine::detail
