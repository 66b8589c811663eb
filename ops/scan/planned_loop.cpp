// A captured loop of step products and compiled chains on buffers planned once
// (planned_loop_detail.hpp).
#include <recur/ops/scan/planned_loop_detail.hpp>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <string_view>
#include <type_traits>

#include <recur/ops/linalg.hpp>
#include <recur/ops/scan/elementwise_chain_detail.hpp>
#include <recur/ops/scan/elementwise_chain_raw_detail.hpp>
#include <recur/ops/scan/weight_grad_rows_detail.hpp>

namespace recur::scan_engine::detail {
namespace {

using In = LoopWiring::In;

thread_local std::uint64_t runs = 0;

std::atomic<bool> planned_on{[] {
  const char* v = std::getenv("RECUR_SCAN_PLANNED_LOOP");
  return !(v && std::string_view(v) == "off");
}()};

// One op of the step as the plan runs it.
struct PlannedOp {
  // A chain: its program, its layout on the step's shapes, and the values it keeps for its
  // backward beyond its outputs ([steps, kept, elements]).
  const ChainProgram* chain = nullptr;
  std::shared_ptr<const chain::ChainLayout> layout_held;
  const chain::ChainLayout* layout = nullptr;
  Tensor inner;
  // A product h W ([m, k] [k, n], or W^T): its kernels (nullptr: matmul takes it).
  StepProductKernels product;
  std::int64_t m = 0, k = 0, n = 0;
  // Per input: whether no other input of the op reads the same value (its gradient share
  // may then be written straight into that value's gradient where it is the first).
  std::vector<std::uint8_t> sole;
};

template <class T>
class Planned final : public PlannedLoop {
 public:
  Planned(const LoopWiring& w, std::int64_t steps) : w_(w), steps_(steps) {}

  // False where the loop has an op the plan does not run.
  bool plan(std::span<const Tensor> in);
  std::vector<Tensor> forward(std::span<const Tensor> in) override;
  void backward(const BackwardArgs<Tensor>& a) const override;
  const KeptValues& kept() const override { return kept_; }
  void held(Grads<Tensor>& out) const override {
    for (std::size_t v = 0; v < w_.n_op_values; ++v)
      if (every_step_[v]) out.push_back(holder_[v]);
    for (const PlannedOp& op : ops_)
      if (op.inner.defined()) out.push_back(op.inner);
  }

 private:
  // The node's inputs (in_), and their elements (in_data_: nullptr where one was dropped, as
  // no rule reads it), for the calls that follow.
  void point_at(const auto& inputs, std::size_t n) const {
    in_.assign(n, nullptr);
    in_data_.assign(n, nullptr);
    for (std::size_t i = 0; i < n; ++i) {
      in_[i] = &inputs[i];
      if (inputs[i].defined()) in_data_[i] = static_cast<T*>(const_cast<void*>(inputs[i].raw_data()));
    }
  }
  // Step t's elements of value v: a row of its node input, or of its buffer.
  T* at(std::size_t v, std::int64_t t) const {
    if (v >= w_.n_op_values) {
      T* const rows = in_data_[w_.row_source[v - w_.n_op_values]];
      return rows ? rows + t * numel_[v] : nullptr;
    }
    if (!holder_[v].defined()) return nullptr;  // a value no rule reads, after forward
    return static_cast<T*>(const_cast<void*>(holder_[v].raw_data())) + (every_step_[v] ? t : t & 1) * numel_[v];
  }
  // What operand `s` reads at step t.
  T* read(const In& s, std::int64_t t) const {
    if (s.kind == In::Kind::value) return at(s.index, t);
    if (reads_node_input(s, t)) return in_data_[s.index];
    return at(w_.carry_result[s.index], t - 1);
  }
  // The same as a tensor (the products matmul takes).
  Tensor view(const In& s, std::int64_t t) const {
    if (s.kind == In::Kind::value && s.index >= w_.n_op_values)
      return (*in_[w_.row_source[s.index - w_.n_op_values]])[t];
    if (reads_node_input(s, t)) return *in_[s.index];
    const std::size_t v = s.kind == In::Kind::value ? s.index : w_.carry_result[s.index];
    const std::int64_t step = s.kind == In::Kind::value ? t : t - 1;
    return holder_[v][every_step_[v] ? step : step & 1];
  }
  const Shape& shape_of(const In& s, std::span<const Tensor> in) const {
    return s.kind == In::Kind::value ? shape_[s.index] : in[s.index].shape();
  }

  // Where op's chain keeps its values at step t (values[k] for instruction k).
  template <class P>
  void point_at_kept(const PlannedOp& op, std::int64_t t, P* values) const {
    const std::size_t n_kept = op.chain->kept.size();
    if (n_kept == 0) return;
    const std::int64_t total = op.layout->total;
    T* const row =
        static_cast<T*>(const_cast<void*>(op.inner.raw_data())) + t * static_cast<std::int64_t>(n_kept) * total;
    for (std::size_t j = 0; j < n_kept; ++j) values[op.chain->kept[j]] = row + static_cast<std::int64_t>(j) * total;
  }

  void forward_chain(const PlannedOp& op, std::size_t k, std::int64_t t) const;
  void forward_product(const PlannedOp& op, std::size_t k, std::int64_t t) const;

  const LoopWiring& w_;
  std::int64_t steps_;
  std::vector<PlannedOp> ops_;
  std::vector<Shape> shape_;            // per value
  std::vector<std::int64_t> numel_;     // per value
  // Per op value: [steps, ...] where kept (a stacked output's is the output), else [2, ...].
  std::vector<Tensor> holder_;
  std::vector<std::uint8_t> every_step_;
  std::vector<std::uint32_t> readers_;  // per value: the op inputs that read it
  std::vector<Shape> in_shapes_;        // per node input
  KeptValues kept_;
  mutable std::vector<const Tensor*> in_;
  mutable std::vector<T*> in_data_;
};

template <class T>
bool Planned<T>::plan(std::span<const Tensor> in) {
  if (steps_ <= 0 || in.size() != w_.n_inputs) return false;
  for (const Tensor& x : in)
    if (!x.defined() || x.dtype() != dtype_of<T>()) return false;
  const std::size_t n_op = w_.n_op_values;
  in_shapes_.clear();
  for (const Tensor& x : in) in_shapes_.push_back(x.shape());
  shape_.assign(w_.n_values, Shape{});
  numel_.assign(w_.n_values, 0);
  for (std::size_t r = 0; r < w_.row_source.size(); ++r) {
    const Tensor& rows = in[w_.row_source[r]];
    if (rows.rank() < 1 || rows.size(0) < steps_) return false;
    shape_[n_op + r] = Shape(rows.shape().begin() + 1, rows.shape().end());
  }
  // Each op's output shapes, in step order.
  ops_.assign(w_.ops.size(), PlannedOp{});
  for (std::size_t k = 0; k < w_.ops.size(); ++k) {
    PlannedOp& op = ops_[k];
    const std::vector<In>& ins = w_.inputs[k];
    if (const ChainProgram* p = chain_program_of(w_.ops[k])) {
      if (p->outputs.size() != w_.n_out[k]) return false;
      for (std::size_t o = 0; o < p->outputs.size(); ++o) {
        if (std::count(p->outputs.begin(), p->outputs.end(), p->outputs[o]) != 1) return false;
        shape_[w_.first[k] + o] = p->shape;
      }
      op.chain = p;
      continue;
    }
    if (ins.size() != 2 || w_.n_out[k] != 1 || ins[1].kind != In::Kind::external) return false;
    const Tensor& weight = in[ins[1].index];
    const Shape& h = shape_of(ins[0], in);
    if (h.size() != 2 || weight.rank() != 2) return false;
    std::optional<StepProductKernels> kernels = step_product_kernels(w_.ops[k], h[0], weight);
    if (!kernels) return false;
    op.product = *kernels;
    const bool tw = op.product.transpose_w;
    op.m = h[0], op.k = h[1], op.n = weight.size(tw ? 0 : 1);
    if (op.k != weight.size(tw ? 1 : 0)) return false;
    shape_[w_.first[k]] = Shape{op.m, op.n};
  }
  for (std::size_t v = 0; v < w_.n_values; ++v) numel_[v] = numel(shape_[v]);
  readers_.assign(w_.n_values, 0);
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const std::vector<In>& ins = w_.inputs[k];
    for (const In& s : ins) {
      if (s.kind == In::Kind::value) ++readers_[s.index];
      ops_[k].sole.push_back(std::count_if(ins.begin(), ins.end(), [&](const In& o) {
                               return o.kind == s.kind && o.index == s.index;
                             }) == 1);
    }
  }
  for (std::size_t c = 0; c < w_.carry_result.size(); ++c)
    if (shape_[w_.carry_result[c]] != in[c].shape()) return false;  // the next step would read another shape
  // What backward reads: a product's h and W, a chain's slots and outputs its rules read.
  kept_ = kept_values(
      w_,
      [&](std::size_t k, std::size_t s) {
        const ChainProgram* p = ops_[k].chain;
        if (!p) return true;
        for (std::size_t j = 0; j < p->slots.size(); ++j)
          if (p->slots_read[j] && p->slots[j].input == s) return true;
        return false;
      },
      [&](std::size_t k, std::size_t o) { return ops_[k].chain && ops_[k].chain->outputs_read[o]; });
  // The buffers: a row per step where kept, else two rows (step t's and the step before's).
  holder_.assign(n_op, Tensor());
  every_step_.assign(n_op, 0);
  for (std::size_t v = 0; v < n_op; ++v) {
    Shape all = shape_[v];
    all.insert(all.begin(), kept_.values[v] ? steps_ : 2);
    holder_[v] = Tensor::empty(all, dtype_of<T>());
    every_step_[v] = kept_.values[v];
  }
  // The chains' layouts on step 0's operands (the same shapes at every step), compiled.
  point_at(in, in.size());
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    PlannedOp& op = ops_[k];
    if (!op.chain) continue;
    std::vector<Tensor> operands;
    for (const In& s : w_.inputs[k]) operands.push_back(view(s, 0));
    std::vector<const Tensor*> at;
    for (const Tensor& x : operands) at.push_back(&x);
    op.layout = &chain::layout_of(*op.chain, InputList<Tensor>(at.data(), at.size()), op.layout_held);
    if (!op.layout->forward_calls || !chain::compiled_chains()) return false;
    if (!op.chain->kept.empty())
      op.inner = Tensor::empty({steps_, static_cast<std::int64_t>(op.chain->kept.size()), op.layout->total},
                               dtype_of<T>());
  }
  return true;
}

template <class T>
void Planned<T>::forward_chain(const PlannedOp& op, std::size_t k, std::int64_t t) const {
  const ChainProgram& p = *op.chain;
  boost::container::small_vector<const T*, 8> ins;
  for (const In& s : w_.inputs[k]) ins.push_back(read(s, t));
  boost::container::small_vector<T*, 32> values(p.code.size(), nullptr);
  for (std::size_t o = 0; o < p.outputs.size(); ++o) values[p.outputs[o]] = at(w_.first[k] + o, t);
  point_at_kept(op, t, values.data());
  chain::run_forward<T>(p, *op.layout, std::span<const T* const>(ins.data(), ins.size()),
                        std::span<T* const>(values.data(), values.size()));
}

template <class T>
void Planned<T>::forward_product(const PlannedOp& op, std::size_t k, std::int64_t t) const {
  T* const out = at(w_.first[k], t);
  if (op.m * op.n == 0) return;
  if constexpr (std::is_same_v<T, float>) {
    if (op.product.forward) {
      (*op.product.forward)(read(w_.inputs[k][0], t), out);
      return;
    }
  }
  const Tensor r = matmul_t(view(w_.inputs[k][0], t), *in_[w_.inputs[k][1].index], false, op.product.transpose_w);
  std::copy_n(r.data<T>(), r.numel(), out);
}

template <class T>
std::vector<Tensor> Planned<T>::forward(std::span<const Tensor> in) {
  ++runs;
  point_at(in, in.size());
  for (std::int64_t t = 0; t < steps_; ++t)
    for (std::size_t k = 0; k < ops_.size(); ++k) {
      if (ops_[k].chain) forward_chain(ops_[k], k, t);
      else forward_product(ops_[k], k, t);
    }
  std::vector<Tensor> outs;
  for (const LoopWiring::Out& o : w_.outputs) {
    if (o.stacked) outs.push_back(holder_[o.result]);
    else if (every_step_[o.result]) outs.push_back(holder_[o.result][steps_ - 1]);
    else outs.push_back(holder_[o.result][(steps_ - 1) & 1].clone());  // its buffer is reused
  }
  // The values no rule reads are not held past forward.
  for (std::size_t v = 0; v < w_.n_op_values; ++v)
    if (!every_step_[v]) holder_[v] = Tensor();
  return outs;
}

// A share of gradient g into d: the first taken as it is (copied: the same bits as taking
// it), later ones added (acc + g, as the tape adds them).
template <class T>
void add_share(T* d, const T* g, std::int64_t n, bool first) {
  if (first) std::copy_n(g, n, d);
  else
    for (std::int64_t i = 0; i < n; ++i) d[i] = d[i] + g[i];
}

// A gradient of one value during backward: its own buffer, and whether a share reached it.
template <class T>
struct Register {
  Tensor buffer;
  bool defined = false;
  T* data() { return static_cast<T*>(buffer.raw_data()); }
  void add(const T* g, std::int64_t n) {
    add_share(data(), g, n, !defined);
    defined = true;
  }
};

template <class T>
void Planned<T>::backward(const BackwardArgs<Tensor>& a) const {
  if (!a.sink) fail<ValueError>("scan_captured_loop", "its backward runs inside a tape's backward pass only");
  point_at(a.inputs, a.inputs.size());
  const std::size_t n = w_.n_values, n_op = w_.n_op_values;
  // Registers: per value, per carry (the share a step's value gets from the next step's reads).
  std::vector<Register<T>> g(n), carried(w_.carry_result.size());
  for (std::size_t v = 0; v < n; ++v) g[v].buffer = Tensor::empty(shape_[v], dtype_of<T>());
  for (std::size_t c = 0; c < carried.size(); ++c)
    carried[c].buffer = Tensor::empty(shape_[w_.carry_result[c]], dtype_of<T>());
  // What reached the outputs from outside: a stacked output's row per step, the last value's at the last step.
  std::vector<const T*> given(w_.outputs.size(), nullptr);
  for (std::size_t o = 0; o < w_.outputs.size(); ++o) {
    const Tensor* go = o == 0 ? &a.grad : (o - 1 < a.more_grads.size() ? &a.more_grads[o - 1] : nullptr);
    if (go && go->defined()) given[o] = go->data<T>();
  }
  auto outside = [&](std::size_t v, std::int64_t t) -> const T* {
    for (std::size_t o = 0; o < w_.outputs.size(); ++o) {
      const LoopWiring::Out& out = w_.outputs[o];
      if (out.result != v || !given[o]) continue;
      if (out.stacked) return given[o] + t * numel_[v];
      if (t + 1 == steps_) return given[o];
    }
    return nullptr;
  };
  // Per chain, where its inputs' gradients are written; a zero gradient for a chain's main
  // output none reached, and a product's dh where it is not written in place (sized for
  // those alone: a weight may be far larger than a step's values).
  std::vector<std::vector<Tensor>> chain_grads(ops_.size());
  std::int64_t chain_output = 0, product_operand = 0;
  for (std::size_t k = 0; k < ops_.size(); ++k) {
    const PlannedOp& op = ops_[k];
    if (!op.chain) {
      product_operand = std::max(product_operand, op.m * op.k);
      continue;
    }
    for (const In& s : w_.inputs[k])
      chain_grads[k].push_back(
          Tensor::empty(s.kind == In::Kind::value ? shape_[s.index] : a.inputs[s.index].shape(), dtype_of<T>()));
    chain_output = std::max(chain_output, numel_[w_.first[k]]);
  }
  std::vector<T> zero(static_cast<std::size_t>(chain_output), T(0));
  std::vector<T> product_grad(static_cast<std::size_t>(product_operand));
  // A share of gradient for operand `s` at step t: to a value's register, the node's input
  // (the tape's), or the previous step's carried value.
  // Where a share for operand `s` at step t can be written as it is made, instead of made
  // apart and then copied: the gradient buffer of a value or carried value that has no share
  // yet (the first share is taken as it is: the same bits), or row t of a node's gradient
  // that no share reached yet, for a row only this operand reads. nullptr: nowhere.
  auto first_share_at = [&](const PlannedOp& op, std::size_t j, const In& s, std::int64_t t) -> T* {
    if (!op.sole[j]) return nullptr;
    if (s.kind == In::Kind::value && s.index < n_op) return g[s.index].defined ? nullptr : g[s.index].data();
    if (s.kind == In::Kind::carried && t > 0) return carried[s.index].defined ? nullptr : carried[s.index].data();
    if (s.kind != In::Kind::value || readers_[s.index] != 1 || g[s.index].defined) return nullptr;
    const std::uint32_t source = w_.row_source[s.index - n_op];
    if (!a.needs[source]) return nullptr;  // this pass wants no gradient of the node (grad of others)
    bool fresh = false;
    Tensor& acc = a.sink->dense_rows(source, t, t + 1, fresh);
    return fresh ? static_cast<T*>(acc.raw_data()) + t * numel_[s.index] : nullptr;
  };
  // The share written there: its value's (or carried value's) gradient now has one.
  auto took_first_share = [&](const In& s) {
    if (s.kind == In::Kind::carried) carried[s.index].defined = true;
    else if (s.index < n_op) g[s.index].defined = true;
  };
  auto share = [&](const In& s, std::int64_t t, const T* src, std::int64_t count) {
    if (s.kind == In::Kind::value) return g[s.index].add(src, count);
    if (!reads_node_input(s, t)) return carried[s.index].add(src, count);
    // The node's input's gradient so far, added to in place as the tape adds a share (the
    // first taken as it is where its rows are fresh: the same bits); a scalar's handed over.
    const Shape& shape = in_shapes_[s.index];
    if (shape.empty()) {
      Tensor copy = Tensor::empty(shape, dtype_of<T>());
      std::copy_n(src, count, static_cast<T*>(copy.raw_data()));
      return a.sink->add(s.index, std::move(copy));
    }
    bool fresh = false;
    Tensor& acc = a.sink->dense_rows(s.index, 0, shape[0], fresh);
    add_share(static_cast<T*>(acc.raw_data()), src, count, fresh);
  };
  for (std::int64_t t = steps_ - 1; t >= 0; --t) {
    // This step's results: what reached them from outside, then from the next step's reads
    // (in the loop node's order: loop_wiring's backward_values).
    for (Register<T>& r : g) r.defined = false;
    for (const LoopWiring::Out& out : w_.outputs)
      if (const T* src = outside(out.result, t)) g[out.result].add(src, numel_[out.result]);
    for (std::size_t c = 0; c < carried.size(); ++c) {
      const std::size_t r = w_.carry_result[c];
      if (t + 1 < steps_) std::swap(g[r], carried[c]);  // started from outside(r, t) at step t + 1
      carried[c].defined = false;
      if (t > 0)
        if (const T* src = outside(r, t - 1)) carried[c].add(src, numel_[r]);
    }
    const std::vector<std::uint8_t>& takes = t == 0 ? w_.grad_first : w_.grad_later;
    auto needs = [&](const In& s) -> bool {
      if (s.kind == In::Kind::value) return takes[s.index];
      if (reads_node_input(s, t)) return a.needs[s.index];
      return w_.grad_later[w_.carry_result[s.index]];
    };
    for (std::size_t k = ops_.size(); k-- > 0;) {
      if (!w_.takes_gradient[k]) continue;
      const PlannedOp& op = ops_[k];
      const std::vector<In>& ins = w_.inputs[k];
      const std::size_t v0 = w_.first[k];
      if (!op.chain) {
        if (!g[v0].defined) continue;
        const T* gy = g[v0].data();
        const bool need_h = needs(ins[0]), need_w = needs(ins[1]);
        T* const first = need_h ? first_share_at(op, 0, ins[0], t) : nullptr;
        T* const dh = first ? first : product_grad.data();
        if (need_h) {  // dh = g W^T (g W with W transposed)
          bool done = false;
          if constexpr (std::is_same_v<T, float>) {
            if (op.product.backward && op.m * op.k > 0) {
              (*op.product.backward)(gy, dh);
              done = true;
            }
          }
          if (!done) {
            const Tensor r = matmul_t(g[v0].buffer, *in_[ins[1].index], false, !op.product.transpose_w);
            std::copy_n(r.data<T>(), r.numel(), dh);
          }
        }
        if (need_w)  // dW through the rows taken over many steps (weight_grad_rows_detail.hpp)
          op.product.rows->add<T>(a.sink->pass(), read(ins[0], t), gy, op.m, op.k, op.n, a.sink->dense(ins[1].index));
        if (first) took_first_share(ins[0]);
        else if (need_h) share(ins[0], t, dh, op.m * op.k);
        continue;
      }
      const ChainProgram& p = *op.chain;
      bool any = false;
      for (std::size_t o = 0; o < p.outputs.size(); ++o) any = any || g[v0 + o].defined;
      if (!any) continue;
      Flags need(ins.size(), 0), defined(p.outputs.size(), 0);
      for (std::size_t j = 0; j < ins.size(); ++j) need[j] = needs(ins[j]);
      boost::container::small_vector<const T*, 4> out_grads(p.outputs.size(), nullptr);
      for (std::size_t o = 0; o < p.outputs.size(); ++o) {
        // The main output's gradient is zeros where only the others' reached it (as the loop node's).
        out_grads[o] = g[v0 + o].defined ? g[v0 + o].data() : o == 0 ? zero.data() : nullptr;
        defined[o] = out_grads[o] != nullptr;
      }
      std::shared_ptr<const chain::ChainPasses> passes_held;
      const chain::ChainPasses& passes = chain::passes_of(
          p, *op.layout, std::span<const std::uint8_t>(need.data(), need.size()), defined, passes_held);
      std::shared_ptr<const chain::CompiledBackward> calls_held;
      const chain::CompiledBackward& calls = chain::compiled_backward(p, *op.layout, passes, calls_held);
      boost::container::small_vector<const T*, 8> operands;
      boost::container::small_vector<T*, 8> into(ins.size(), nullptr);
      Flags direct(ins.size(), 0);
      for (std::size_t j = 0; j < ins.size(); ++j) {
        operands.push_back(read(ins[j], t));
        if (!need[j]) continue;
        Tensor& d = chain_grads[k][j];
        T* const first = first_share_at(op, j, ins[j], t);
        direct[j] = first != nullptr;
        into[j] = first ? first : static_cast<T*>(d.raw_data());
        if (op.layout->writes[j] == chain::Writes::sum) std::fill_n(into[j], d.numel(), T(0));
      }
      // The values its rules read: outputs they read, and the rows forward kept.
      boost::container::small_vector<const T*, 32> values(p.code.size(), nullptr);
      for (std::size_t o = 0; o < p.outputs.size(); ++o)
        if (p.outputs_read[o]) values[p.outputs[o]] = at(v0 + o, t);
      point_at_kept(op, t, values.data());
      chain::run_backward<T>(p, *op.layout, calls, std::span<const T* const>(operands.data(), operands.size()),
                             std::span<const T* const>(values.data(), values.size()),
                             std::span<const T* const>(out_grads.data(), out_grads.size()),
                             std::span<T* const>(into.data(), into.size()));
      for (std::size_t j = 0; j < ins.size(); ++j) {
        if (direct[j]) took_first_share(ins[j]);
        else if (need[j]) share(ins[j], t, into[j], chain_grads[k][j].numel());
      }
    }
    // The rows this step read: their gradients into their nodes' rows t (as x[t]'s rule does).
    for (std::size_t r = 0; r < w_.row_source.size(); ++r) {
      const std::size_t v = n_op + r;
      const std::uint32_t source = w_.row_source[r];
      if (!g[v].defined || !a.needs[source]) continue;
      bool fresh = false;
      Tensor& acc = a.sink->dense_rows(source, t, t + 1, fresh);
      add_share(static_cast<T*>(acc.raw_data()) + t * numel_[v], g[v].data(), numel_[v], fresh);
    }
  }
}

}  // namespace

std::unique_ptr<PlannedLoop> plan_loop(const LoopWiring& w, std::span<const Tensor> in, std::int64_t steps) {
  if (!planned_loop_switch() || in.empty() || !in[0].defined()) return nullptr;
  auto make = [&]<class T>() -> std::unique_ptr<PlannedLoop> {
    auto plan = std::make_unique<Planned<T>>(w, steps);
    if (!plan->plan(in)) return nullptr;
    return plan;
  };
  if (in[0].dtype() == DType::float32) return make.template operator()<float>();
  if (in[0].dtype() == DType::float64) return make.template operator()<double>();
  return nullptr;
}

void set_planned_loop_switch(bool on) { planned_on.store(on, std::memory_order_relaxed); }
bool planned_loop_switch() { return planned_on.load(std::memory_order_relaxed); }
std::uint64_t planned_loop_runs() { return runs; }

}  // namespace recur::scan_engine::detail
