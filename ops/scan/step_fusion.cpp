// Elementwise chains of a captured step fused into one op each (step_rewrite_detail.hpp,
// elementwise_chain_detail.hpp).
#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <unordered_map>
#include <unordered_set>

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
    decide();
    rebuild();
    return static_cast<int>(groups_.size());
  }

  // Per op: whether the chains would run it (a member, a slice read in place, a lifted op).
  std::vector<std::uint8_t> fused_ops() {
    decide();
    std::vector<std::uint8_t> fused(p_.ops.size(), 0);
    for (std::size_t k = 0; k < p_.ops.size(); ++k)
      fused[k] = group_of_[k] >= 0 || absorbed_.contains(k) || lifted_.contains(k);
    return fused;
  }

 private:
  Shape shape(const ValueRef& r) const {
    if (r.kind != Kind::local) return shape_of_(r);
    return r.output == 0 ? op_shapes_[r.index] : Shape{-1};
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

  // A chain gains when it saves passes over memory that cost more than its own: four ops or
  // more, one of them tanh, sigmoid or exp (measured: shorter chains, or adds alone, lose;
  // add's rule passes its gradient on without a copy, where the chain writes every input's).
  bool worth_fusing(const std::vector<std::size_t>& g) const {
    return g.size() >= 4 && std::any_of(g.begin(), g.end(), [&](std::size_t k) {
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

  // Whether op k's value is read outside g (by another op, or as the step's result).
  bool escapes(std::size_t k, const std::vector<std::size_t>& g) const {
    return read_outside(k, [&](std::size_t j) { return std::find(g.begin(), g.end(), j) != g.end(); });
  }
  // Whether op k's value is read by an op that is not `inside`, or is the step's result.
  template <class Inside>
  bool read_outside(std::size_t k, Inside&& inside) const {
    auto reads_k = [&](const ValueRef& r) { return r.kind == Kind::local && r.index == k; };
    for (std::size_t j = 0; j < p_.ops.size(); ++j)
      if (!inside(j) && std::any_of(p_.ops[j].inputs.begin(), p_.ops[j].inputs.end(), reads_k)) return true;
    return op_is_result(p_, k);
  }

  // The chains, the slices they read in place and the ops lifted into them, before any op moves.
  void decide() {
    for (const StepOp& op : p_.ops) op_shapes_.push_back(op.shape);  // rebuild moves the ops
    find_groups();
    // A chain none of whose values is read after it (dead code of the step) stays as it is.
    std::erase_if(groups_, [&](const std::vector<std::size_t>& g) {
      return std::none_of(g.begin(), g.end(), [&](std::size_t k) { return escapes(k, g); });
    });
    group_of_.assign(p_.ops.size(), -1);
    for (std::size_t g = 0; g < groups_.size(); ++g)
      for (std::size_t k : groups_[g]) group_of_[k] = static_cast<int>(g);
    for (std::size_t g = 0; g < groups_.size(); ++g) {  // decided before any op moves
      std::vector<std::size_t> slices;
      for (std::size_t k : groups_[g])
        for (const ValueRef& r : p_.ops[k].inputs)
          if (const auto column = column_of(r, groups_[g])) {
            absorbed_[r.index] = *column;
            slices.push_back(r.index);
          }
      lift_into(slices);
    }
  }

  void rebuild() {
    const std::vector<int>& group_of = group_of_;
    std::vector<std::vector<ValueRef>> mapped(p_.ops.size());  // per old op: its outputs' new refs
    auto map = [&](const ValueRef& r) { return r.kind == Kind::local ? mapped[r.index][r.output] : r; };
    std::vector<StepOp> ops;
    for (std::size_t k = 0; k < p_.ops.size(); ++k) {
      const int g = group_of[k];
      if (g >= 0 && k != groups_[g].back()) continue;  // made with its chain's last op
      if (g < 0 && (absorbed_.contains(k) || lifted_.contains(k))) continue;  // read, or run, by its chain
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
    chain->shape = op_shapes_[g.back()];
    StepOp op{{}, {}, 0, chain->shape};
    // The chain's slot of `outer` (a value made outside it), read whole or at `column`.
    auto slot_of = [&](const ValueRef& outer, std::int64_t column) {
      auto it = std::find(op.inputs.begin(), op.inputs.end(), outer);
      if (it == op.inputs.end()) it = op.inputs.insert(op.inputs.end(), outer);
      const ChainSlot slot{static_cast<std::uint16_t>(it - op.inputs.begin()), column};
      auto at_slot = std::find(chain->slots.begin(), chain->slots.end(), slot);
      if (at_slot == chain->slots.end()) at_slot = chain->slots.insert(chain->slots.end(), slot);
      return ChainOperand{true, static_cast<std::uint16_t>(at_slot - chain->slots.begin())};
    };
    auto instruction = [&](const StepOp& member, auto&& operand_of) {
      ChainInstruction in{*chain_code(member.op.name()), {}, {}};
      for (std::size_t o = 0; o < member.inputs.size(); ++o) (o == 0 ? in.a : in.b) = operand_of(member.inputs[o]);
      chain->code.push_back(in);
      return static_cast<std::uint16_t>(chain->code.size() - 1);
    };
    // Columns [column, column + width) of `r`: a lifted op run on its inputs' columns (once
    // per column), or a slot of r's columns (r whole when it is a scalar).
    std::map<std::pair<std::size_t, std::int64_t>, std::uint16_t> lifted_at;
    auto columns = [&](auto&& self, const ValueRef& r, std::int64_t column) -> ChainOperand {
      if (r.kind != Kind::local || !lifted_.contains(r.index))
        return slot_of(map(r), numel(shape(r)) == 1 ? -1 : column);
      const auto key = std::make_pair(std::size_t{r.index}, column);
      if (const auto it = lifted_at.find(key); it != lifted_at.end()) return {false, it->second};
      const StepOp& lifted = p_.ops[r.index];
      const std::uint16_t k = instruction(lifted, [&](const ValueRef& in) { return self(self, in, column); });
      chain->ops.push_back(lifted.op.clone());
      lifted_at.emplace(key, k);
      return {false, k};
    };
    std::vector<std::uint16_t> at_instruction(g.size());  // member i's instruction
    for (std::size_t i = 0; i < g.size(); ++i) {
      StepOp& member = p_.ops[g[i]];
      const std::uint16_t k = instruction(member, [&](const ValueRef& r) -> ChainOperand {
        const auto inside = std::find(g.begin(), g.end(), r.kind == Kind::local ? r.index : SIZE_MAX);
        if (inside != g.end()) return {false, at_instruction[inside - g.begin()]};
        const auto found = r.kind == Kind::local ? absorbed_.find(r.index) : absorbed_.end();
        if (found == absorbed_.end()) return slot_of(map(r), -1);
        return columns(columns, p_.ops[r.index].inputs[0], found->second);
      });
      at_instruction[i] = k;
      chain->ops.push_back(std::move(member.op));
      mapped[g[i]].assign(1, ValueRef{});
      if (escapes(g[i], g)) {
        mapped[g[i]][0] = {Kind::local, at, op.outputs};
        chain->outputs.push_back(k);
        ++op.outputs;
      }
    }
    op.op = elementwise_chain_op(std::move(chain));
    return op;
  }

  // Elementwise ops before a split whose values only the chain's slices read run inside the
  // chain, once per slice on their inputs' columns (split(a + b) = split(a) + split(b), the
  // same arithmetic per element): a merged product's bias sums no longer make whole tensors.
  // An op is lifted when it has the slices' source shape, its inputs are of that shape, one
  // row of it or scalars, and everything that reads it is lifted or one of `slices`.
  void lift_into(const std::vector<std::size_t>& slices) {
    std::unordered_set<std::size_t> candidates;
    std::vector<ValueRef> todo;
    for (std::size_t s : slices) todo.push_back(p_.ops[s].inputs[0]);
    while (!todo.empty()) {
      const ValueRef r = todo.back();
      todo.pop_back();
      if (r.kind != Kind::local || candidates.contains(r.index) || !liftable(r.index)) continue;
      candidates.insert(r.index);
      for (const ValueRef& in : p_.ops[r.index].inputs) todo.push_back(in);
    }
    // Drop any candidate read by something else, until none is.
    const std::unordered_set<std::size_t> readers_ok(slices.begin(), slices.end());
    for (bool changed = true; changed;) {
      changed = false;
      for (auto it = candidates.begin(); it != candidates.end();) {
        if (read_only_by(*it, candidates, readers_ok)) {
          ++it;
          continue;
        }
        it = candidates.erase(it);
        changed = true;
      }
    }
    lifted_.insert(candidates.begin(), candidates.end());
  }

  bool liftable(std::size_t k) const {
    const StepOp& op = p_.ops[k];
    const auto code = chain_code(op.op.name());
    if (!code || op.outputs != 1 || !op.op.elementwise() || !op.takes_gradient || group_of_[k] >= 0 ||
        lifted_.contains(k) || op.shape.empty())
      return false;
    if (op.inputs.size() != (*code >= ChainCode::neg ? 1u : 2u)) return false;
    return std::all_of(op.inputs.begin(), op.inputs.end(), [&](const ValueRef& r) {
      const Shape s = shape(r);
      return s == op.shape || numel(s) == 1 || (!s.empty() && s.back() == op.shape.back() && numel(s) == s.back());
    });
  }

  // Whether every reader of op k's value is in `lifted` or `slices` (and it is no result).
  bool read_only_by(std::size_t k, const std::unordered_set<std::size_t>& lifted,
                    const std::unordered_set<std::size_t>& slices) const {
    return !read_outside(k, [&](std::size_t j) { return lifted.contains(j) || slices.contains(j); });
  }

  // Where chain g reads `r` in place: the first column, when r is a slice along the last
  // axis (step 1) that only g reads, cutting whole rows of the chain's shape out of a value
  // with the same leading sizes, and g has no broadcast input of another period.
  std::optional<std::int64_t> column_of(const ValueRef& r, const std::vector<std::size_t>& g) const {
    if (r.kind != Kind::local || r.output != 0 || std::find(g.begin(), g.end(), r.index) != g.end())
      return std::nullopt;
    const StepOp& slice = p_.ops[r.index];
    if (slice.op.name() != "slice" || slice.outputs != 1) return std::nullopt;
    const ValueRef& source = slice.inputs[0];  // made before the chain, not by it
    if (source.kind == Kind::local && std::find(g.begin(), g.end(), source.index) != g.end()) return std::nullopt;
    const Shape& chain = p_.ops[g.front()].shape;
    const Shape from = shape(slice.inputs[0]);
    if (chain.empty() || slice.shape != chain || from.size() != chain.size() ||
        !std::equal(chain.begin(), chain.end() - 1, from.begin()))
      return std::nullopt;
    const OpAttributes a = *slice.op.attributes();
    const auto rank = static_cast<std::int64_t>(chain.size());
    const std::int64_t axis = a.get<std::int64_t>("slice", "axis"), start = a.get<std::int64_t>("slice", "start");
    if ((axis != rank - 1 && axis != -1) || a.get<std::int64_t>("slice", "step") != 1 || start < 0 ||
        start + chain.back() > from.back())
      return std::nullopt;
    if (escapes(r.index, g)) return std::nullopt;  // read by more than the chain
    for (std::size_t k : g)  // blocks of whole rows: a bias must repeat every row
      for (const ValueRef& in : p_.ops[k].inputs) {
        const std::int64_t q = in.kind == Kind::local && std::find(g.begin(), g.end(), in.index) != g.end()
                                   ? numel(chain)
                                   : period_in(shape(in), chain);
        if (q != 1 && q != numel(chain) && q != chain.back()) return std::nullopt;
      }
    return start;
  }

  StepProgram& p_;
  const std::function<Shape(const ValueRef&)>& shape_of_;
  std::vector<std::vector<std::size_t>> groups_;
  std::unordered_map<std::size_t, std::int64_t> absorbed_;  // slice op -> its first column, read in place
  std::unordered_set<std::size_t> lifted_;                   // ops run inside a chain, per slice (lift_into)
  std::vector<int> group_of_;                                // op -> its chain, or -1
  std::vector<Shape> op_shapes_;                             // op -> its first output's shape
};

}  // namespace

int fuse_elementwise(StepProgram& program, const std::function<Shape(const ValueRef&)>& shape_of) {
  return Fuser(program, shape_of)();
}

std::vector<std::uint8_t> ops_fused(StepProgram& program, const std::function<Shape(const ValueRef&)>& shape_of) {
  return Fuser(program, shape_of).fused_ops();
}

}  // namespace recur::scan_engine::detail
