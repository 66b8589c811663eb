// A one-block chain compiled into its kernel calls (elementwise_chain_compiled_detail.hpp).
// Each compiler walks what the interpreter does over its one block (begin 0, n the chain's
// elements: ChainBlocks::run and chain::backward) and writes each call down with its places
// instead of making it.
#include <recur/ops/scan/elementwise_chain_compiled_detail.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>

#include <recur/ops/scan/elementwise_chain_blocks_detail.hpp>
#include <recur/ops/scan/elementwise_chain_layout_detail.hpp>
#include <recur/ops/scan/elementwise_chain_passes_detail.hpp>

namespace recur::scan_engine::detail::chain {
namespace {

using Kind = CompiledCall::Kind;

std::atomic<bool> compiled_on{[] {
  const char* v = std::getenv("RECUR_SCAN_CHAIN");
  return !(v && std::string_view(v) == "interpreted");
}()};

std::uint16_t base(std::size_t b) { return static_cast<std::uint16_t>(b); }

CompiledCall call_of(Kind kind) {
  CompiledCall call;
  call.kind = kind;
  return call;
}

// A run of elements at compile time: its place, and its rows' distance where it is a slot of
// columns read row by row (0: contiguous, rows `width` apart).
struct RunAt {
  Place at;
  std::int64_t stride = 0;
};

// What both compilers share: the chain, its layout, and how a run's row is found.
class Compiler {
 public:
  Compiler(const ChainProgram& p, const ChainLayout& l) : p_(p), l_(l), n_(l.total), width_(l.width) {}

 protected:
  // Run r's place from row `row` on (ChainBlocks::at).
  Place row_of(const RunAt& r, std::int64_t row) const {
    if (r.at.base == Place::kNowhere) return {};
    return {r.at.base, r.at.offset + row * (r.stride ? r.stride : width_)};
  }
  // f(row, len) as ChainBlocks::each_run calls it over the block.
  template <class F>
  void each_run(bool strided, F&& f) const {
    if (!strided || n_ == width_) {
      f(0, n_);
      return;
    }
    for (std::int64_t row = 0; row < n_ / width_; ++row) f(row, width_);
  }
  // Where the block reads each slot (ChainBlocks' constructor and ChainBlocks::operand): in
  // place (whole, or its columns row by row), or as a block-sized copy of a repeated slot
  // (a broadcast input, columns of one row), made by a call into base `copies`. With
  // `backward`, only the slots the backward reads (ChainProgram::slots_read); the others
  // are nowhere.
  std::vector<RunAt> read_slots(std::size_t inputs, std::size_t copies, bool backward,
                                std::vector<CompiledCall>& out) const {
    std::vector<RunAt> at(p_.slots.size());
    std::int64_t made = 0;
    for (std::size_t j = 0; j < p_.slots.size(); ++j) {
      if (backward && !p_.slots_read[j]) continue;
      const ChainSlot& slot = p_.slots[j];
      if (l_.strided[j]) {
        at[j] = {{base(inputs + slot.input), slot.column}, l_.row_stride[j]};
      } else if (!l_.repeated[j]) {
        at[j] = {{base(inputs + slot.input), 0}};
      } else {
        CompiledCall call = call_of(Kind::tile);
        call.a = {base(inputs + slot.input), slot.column >= 0 ? slot.column : 0};
        call.out = {base(copies), made * l_.block};
        call.period = slot.column >= 0 ? width_ : numel(l_.shapes[slot.input]);
        call.len = l_.block;
        out.push_back(call);
        at[j] = {call.out};
        ++made;
      }
    }
    return at;
  }
  // Instruction k's value over the block into `y` (ChainBlocks::run_instruction), reading
  // values from base `values` on.
  void instruction(std::size_t k, std::size_t values, const std::vector<RunAt>& slots, Place y,
                   std::vector<CompiledCall>& out) {
    const ChainInstruction& in = p_.code[k];
    auto operand = [&](const ChainOperand& o) -> RunAt {
      return o.is_input ? slots[o.index] : RunAt{{base(values + o.index), 0}};
    };
    const RunAt ra = operand(in.a), rb = unary(in.code) ? RunAt{} : operand(in.b);
    each_run((ra.stride | rb.stride) != 0, [&](std::int64_t row, std::int64_t len) {
      CompiledCall call = call_of(Kind::code);
      call.code = in.code;
      call.a = row_of(ra, row);
      call.b = row_of(rb, row);
      call.out = {y.base, y.offset + row * width_};
      call.len = len;
      out.push_back(call);
    });
  }

  const ChainProgram& p_;
  const ChainLayout& l_;
  std::int64_t n_, width_;
};

class ForwardCompiler : Compiler {
 public:
  using Compiler::Compiler;
  CompiledForward operator()() {
    CompiledForward f;
    ForwardBases& b = f.bases;
    b.inputs = Place::kNowhere + 1;
    b.values = b.inputs + l_.shapes.size();
    b.copies = b.values + p_.code.size();
    b.size = b.copies + 1;
    const std::vector<RunAt> slots = read_slots(b.inputs, b.copies, false, f.calls);
    for (std::size_t k = 0; k < p_.code.size(); ++k) instruction(k, b.values, slots, {base(b.values + k), 0}, f.calls);
    return f;
  }
};

class BackwardCompiler : Compiler {
 public:
  BackwardCompiler(const ChainProgram& p, const ChainLayout& l, const ChainPasses& passes)
      : Compiler(p, l), plan_(passes) {}

  CompiledBackward operator()() {
    CompiledBackward f;
    f.needs = plan_.needs;
    f.defined = plan_.defined;
    BackwardBases& b = f.bases;
    const std::size_t n_in = l_.shapes.size(), n_code = p_.code.size(), n_slots = p_.slots.size();
    b.inputs = Place::kNowhere + 1;
    b.values = b.inputs + n_in;
    b.out_grads = b.values + n_code;
    b.grads = b.out_grads + p_.outputs.size();
    b.registers = b.grads + n_in;
    b.copies = b.registers + 1;
    b.partials = b.copies + 1;
    b.remade = b.partials + 1;
    b.size = b.remade + 1;
    calls_ = &f.calls;
    bases_ = b;
    slots_ = read_slots(b.inputs, b.copies, true, f.calls);
    // The registers: a given output's gradient, a slot's gradient in place, else the scratch.
    const std::int64_t block = l_.block;
    registers_.assign(n_code + n_slots, RunAt{});
    for (std::size_t r = 0; r < n_code; ++r) {
      const std::int32_t o = plan_.given[r];
      registers_[r] = o >= 0 ? RunAt{{base(b.out_grads + static_cast<std::size_t>(o)), 0}}
                             : RunAt{{base(b.registers), static_cast<std::int64_t>(r) * block}};
    }
    for (std::size_t j = 0; j < n_slots; ++j) {
      const ChainSlot& slot = p_.slots[j];
      const std::size_t r = n_code + j;
      const Writes how = l_.writes[slot.input];
      if (!plan_.needs[slot.input] || how == Writes::sum) {
        registers_[r] = {{base(b.registers), static_cast<std::int64_t>(r) * block}};
      } else if (how == Writes::whole) {
        registers_[r] = {{base(b.grads + slot.input), 0}};
      } else {
        registers_[r] = {{base(b.grads + slot.input), slot.column}, n_ == width_ ? 0 : l_.shapes[slot.input].back()};
      }
    }
    for (std::size_t r = 0; r < p_.recomputed.size(); ++r)
      instruction(p_.recomputed[r], b.values, slots_, {base(b.remade), static_cast<std::int64_t>(r) * block}, f.calls);
    for (const ChainPass& pass : plan_.passes) compile_pass(pass);
    for (std::size_t j = 0; j < n_slots; ++j) write_slot(j);
    for (std::size_t in = 0; in < n_in; ++in) {  // the partials of the one block
      if (l_.partial_at[in] < 0 || !plan_.needs[in]) continue;
      const std::int64_t size = numel(l_.shapes[in]);
      fold({base(b.partials), l_.partial_at[in]}, {base(b.grads + in), 0}, size, size);
    }
    return f;
  }

 private:
  RunAt source(const PassSource& s) const {
    if (s.kind == PassSource::Kind::value) return {{base(bases_.values + s.operand.index), 0}};
    if (s.kind == PassSource::Kind::operand)
      return s.operand.is_input ? slots_[s.operand.index] : RunAt{{base(bases_.values + s.operand.index), 0}};
    return {};
  }

  void compile_pass(const ChainPass& pass) {
    const RunAt into = registers_[pass.into];
    if (pass.from_output) {
      CompiledCall call = call_of(Kind::grad);
      call.rule = recur::detail::ChainGrad::copy;
      call.accumulate = pass.accumulate;
      call.a = {base(bases_.out_grads + pass.gradient), 0};
      call.out = into.at;
      call.len = n_;
      calls_->push_back(call);
      return;
    }
    const RunAt gy{registers_[pass.gradient].at};
    const RunAt u = source(pass.u), v = source(pass.v), w = pass.folded ? source(pass.w) : RunAt{};
    const bool strided = (u.stride | v.stride | w.stride | into.stride) != 0;
    each_run(strided, [&](std::int64_t row, std::int64_t len) {
      CompiledCall call = call_of(pass.folded ? Kind::grad_then : Kind::grad);
      call.rule = pass.rule;
      call.then = pass.then;
      call.accumulate = pass.accumulate;
      call.a = {gy.at.base, gy.at.offset + row * width_};
      call.b = row_of(u, row);
      call.c = row_of(v, row);
      call.d = row_of(w, row);
      call.out = row_of(into, row);
      call.len = len;
      calls_->push_back(call);
    });
  }

  void fold(Place from, Place into, std::int64_t period, std::int64_t len) {
    CompiledCall call = call_of(Kind::fold);
    call.a = from;
    call.out = into;
    call.period = period;
    call.len = len;
    calls_->push_back(call);
  }

  // Slot j's gradient into its input's (chain::backward's last loop over a block's slots).
  void write_slot(std::size_t j) {
    const ChainSlot& slot = p_.slots[j];
    if (!plan_.needs[slot.input]) return;
    const Writes how = l_.writes[slot.input];
    if (how != Writes::sum && plan_.slot_written[j]) return;  // written in place
    const std::int64_t stride = l_.row_stride[j];
    const std::int64_t offset0 = slot.column >= 0 ? slot.column : 0;
    if (!plan_.slot_written[j]) {  // zeros where only it writes
      const Place d{base(bases_.grads + slot.input), 0};
      auto zero = [&](Place at, std::int64_t len) {
        CompiledCall call = call_of(Kind::zero);
        call.out = at;
        call.len = len;
        calls_->push_back(call);
      };
      if (how == Writes::whole) zero(d, n_);
      if (how == Writes::tiled)
        for (std::int64_t row = 0; row < n_ / width_; ++row) zero({d.base, offset0 + row * stride}, width_);
      return;
    }
    const Place g = registers_[plan_.slot_register[j]].at;
    const bool partial = l_.partial_at[slot.input] >= 0;
    const Place d = partial ? Place{base(bases_.partials), l_.partial_at[slot.input]}
                            : Place{base(bases_.grads + slot.input), 0};
    const std::int64_t size = numel(l_.shapes[slot.input]);
    if (slot.column >= 0) {  // its columns of each row
      for (std::int64_t row = 0; row < n_ / width_; ++row)
        fold({g.base, g.offset + row * width_}, {d.base, d.offset + offset0 + row * stride}, width_, width_);
    } else if (size == l_.total) {  // whole, beside other slots of the same input
      fold(g, d, n_, n_);
    } else {  // a broadcast input sums its repeats
      fold(g, d, size, n_);
    }
  }

  const ChainPasses& plan_;
  BackwardBases bases_;
  std::vector<CompiledCall>* calls_ = nullptr;
  std::vector<RunAt> slots_, registers_;
};

}  // namespace

bool compilable(const ChainProgram& p, const ChainLayout& layout) {
  const std::size_t bases = 2 * layout.shapes.size() + p.code.size() + p.outputs.size() + 8;
  return layout.total > 0 && layout.total <= layout.block && bases <= 0xffff;  // Place::base
}
bool compiled_chains() { return compiled_on.load(std::memory_order_relaxed); }
void set_compiled_chains(bool on) { compiled_on.store(on, std::memory_order_relaxed); }

CompiledForward compile_forward(const ChainProgram& p, const ChainLayout& layout) {
  return ForwardCompiler(p, layout)();
}
CompiledBackward compile_backward(const ChainProgram& p, const ChainLayout& layout, const ChainPasses& passes) {
  return BackwardCompiler(p, layout, passes)();
}

namespace {
thread_local std::uint64_t runs = 0;
}  // namespace
std::uint64_t compiled_runs() { return runs; }

template <class T>
void run_calls(std::span<const CompiledCall> calls, T* const* bases) {
  ++runs;
  const nn::detail::KernelTable<T>& kernels = nn::detail::kernels<T>();
  auto at = [bases](const Place& p) { return bases[p.base] + p.offset; };  // nullptr + 0 for kNowhere
  for (const CompiledCall& c : calls) {
    T* const out = at(c.out);
    switch (c.kind) {
      case Kind::code: run_code<T>(kernels, c.code, at(c.a), at(c.b), out, c.len); break;
      case Kind::grad: kernels.chain_grad_row(c.rule, c.accumulate, at(c.a), at(c.b), at(c.c), out, c.len); break;
      case Kind::grad_then:
        kernels.chain_grad_then_row(c.rule, c.then, c.accumulate, at(c.a), at(c.b), at(c.c), at(c.d), out, c.len);
        break;
      case Kind::tile: {
        const T* a = at(c.a);
        for (std::int64_t i = 0; i < c.len; i += c.period) std::copy_n(a, std::min(c.period, c.len - i), out + i);
        break;
      }
      case Kind::fold: {
        const T* a = at(c.a);
        for (std::int64_t r = 0; r < c.len; r += c.period)
          for (std::int64_t i = 0; i < c.period; ++i) out[i] += a[r + i];
        break;
      }
      case Kind::zero: std::fill_n(out, c.len, T(0)); break;
    }
  }
}

template void run_calls<float>(std::span<const CompiledCall>, float* const*);
template void run_calls<double>(std::span<const CompiledCall>, double* const*);

}  // namespace recur::scan_engine::detail::chain
