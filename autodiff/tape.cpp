#include <recur/autodiff/record.hpp>
#include <recur/autodiff/tape.hpp>

#include <algorithm>
#include <atomic>
#include <mutex>
#include <optional>
#include <unordered_set>

#include <recur/core/creation.hpp>
#include <recur/core/elementwise.hpp>

namespace recur {
namespace {

// Live tapes by slot. A Var names (slot, serial); the slot's serial changes when its tape
// dies, so a stale Var is detected without touching freed memory.
constexpr std::uint32_t kSlots = 1u << 16;
struct Slot {
  std::atomic<std::uint64_t> serial{0};
  Tape* tape = nullptr;
};
Slot slots[kSlots];
std::mutex slot_mutex;
std::vector<std::uint32_t> free_slots;
std::uint32_t next_unused_slot = 1;
std::uint64_t next_serial = 1;

thread_local std::vector<Tape*> current_tapes;

// Gradient accumulation recorded under create_graph: a + b, gradient passed to both.
struct AccumulateGrads {
  static constexpr std::string_view name = "accumulate_grads";
  Tensor forward(const Tensor& a, const Tensor& b) const { return add_tensors(name, a, b); }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {a.grad, a.grad};
  }
};

// Plain backward's GradSink: hands out the accumulated gradient of one node's inputs.
class InputGrads final : public detail::GradSink {
 public:
  InputGrads(std::vector<Tensor>& grads, const detail::NodeStore& nodes, const detail::Node& node)
      : grads_(grads), nodes_(nodes), node_(node) {}
  Tensor& dense(std::size_t input) override {
    const std::uint32_t id = node_.inputs[input];
    Tensor& acc = grads_[id];
    const Tensor& x = nodes_[id].value;
    if (!acc.defined()) acc = zeros(x.shape(), x.dtype());
    else if (!acc.storage()->unique()) acc = acc.clone();
    return acc;
  }

 private:
  std::vector<Tensor>& grads_;
  const detail::NodeStore& nodes_;
  const detail::Node& node_;
};

bool is_defined(const Tensor& t) { return t.defined(); }
bool is_defined(const Var& v) { return v.defined(); }
void accumulate(Tensor& acc, Tensor g) { accumulate_into(acc, g); }
void accumulate(Var& acc, Var g) { acc = acc.defined() ? record(AccumulateGrads{}, acc, g) : std::move(g); }

}  // namespace

namespace detail {
NodeStore::~NodeStore() {
  for (std::uint32_t i = 0; i < size_; ++i) (*this)[i].~Node();
  for (Node* c : chunks_) ::operator delete(static_cast<void*>(c));
}

Node& NodeStore::emplace() {
  if ((size_ >> kChunkBits) == chunks_.size())
    chunks_.push_back(static_cast<Node*>(::operator new(sizeof(Node) * kChunk)));
  Node* n = new (&chunks_[size_ >> kChunkBits][size_ & (kChunk - 1)]) Node();
  ++size_;
  return *n;
}

void NodeStore::pop_back() {
  --size_;
  (*this)[size_].~Node();
}

Tape& common_tape(std::string_view op, std::span<const Var* const> inputs) {
  if (inputs.empty()) return Tape::current();
  Tape* tape = nullptr;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]->defined())
      fail<TapeError>(op, "argument ", i, " is an undefined Var (default-constructed)");
    Tape& t = inputs[i]->tape();
    if (tape && tape != &t)
      fail<TapeError>(op, "argument ", i, " belongs to another tape than argument 0; ",
                      "move values between tapes with detach(v).value()");
    tape = &t;
  }
  return *tape;
}
}  // namespace detail

// ---- Var ------------------------------------------------------------------------------

Var::Var(const Shared& shared) : Var(Tape::current().read(shared)) {}
Var::Var(const Tensor& constant) : Var(Tape::current().constant(constant)) {}

Tape& Var::tape() const {
  if (serial_ == 0) fail<TapeError>("Var", "use of an undefined Var (default-constructed)");
  const Slot& s = slots[slot_];
  if (s.serial.load(std::memory_order_acquire) != serial_)
    fail<TapeError>("Var", "use of a Var whose tape has been destroyed");
  return *s.tape;
}

const Tensor& Var::value() const {
  const Tensor& v = tape().node_value(id_);
  if (!v.defined())
    fail<TapeError>("Var::value", "node ", id_, " is inside a checkpointed scan segment whose values were released; "
                    "read the scan's outputs instead (backward recomputes the segment when it needs it)");
  return v;
}
bool Var::requires_grad() const { return tape().requires_grad(id_); }
Tensor Var::grad() const { return tape().leaf_grad(id_); }

// ---- Tape -----------------------------------------------------------------------------

Tape::Tape() {
  std::lock_guard lock(slot_mutex);
  if (!free_slots.empty()) {
    slot_ = free_slots.back();
    free_slots.pop_back();
  } else {
    if (next_unused_slot == kSlots) fail<TapeError>("Tape", "more than ", kSlots - 1, " live tapes");
    slot_ = next_unused_slot++;
  }
  serial_ = next_serial++;
  slots[slot_].tape = this;
  slots[slot_].serial.store(serial_, std::memory_order_release);
  current_tapes.push_back(this);
}

Tape::~Tape() {
  {
    std::lock_guard lock(slot_mutex);
    slots[slot_].serial.store(0, std::memory_order_release);
    slots[slot_].tape = nullptr;
    free_slots.push_back(slot_);
  }
  auto it = std::find(current_tapes.rbegin(), current_tapes.rend(), this);
  if (it != current_tapes.rend()) current_tapes.erase(std::next(it).base());
}

Tape& Tape::current() {
  if (current_tapes.empty())
    fail<TapeError>("Tape::current", "no live Tape on this thread: create a recur::Tape before using Vars");
  return *current_tapes.back();
}

Var Tape::push(Tensor value, std::span<const std::uint32_t> inputs, detail::OpBox op, bool requires_grad) {
  detail::Node& n = nodes_.emplace();
  n.value = std::move(value);
  if (op) n.inputs.assign(inputs.begin(), inputs.end());
  n.op = std::move(op);
  n.requires_grad = requires_grad;
  return handle(nodes_.size() - 1);
}

Var Tape::constant(Tensor value) {
  if (!value.defined()) fail<ValueError>("Tape::constant", "the tensor is undefined");
  return push(std::move(value), {}, {}, false);
}

Var Tape::variable(Tensor value) {
  if (!value.defined()) fail<ValueError>("Tape::variable", "the tensor is undefined");
  if (!is_floating(value.dtype()))
    fail<DTypeError>("Tape::variable", "a variable must be float32 or float64, got ", value.dtype(),
                     " of shape ", to_string(value.shape()));
  Var v = push(std::move(value), {}, {}, grad_enabled());
  nodes_[v.id()].is_variable = true;
  return v;
}

Var Tape::read(const Shared& shared) {
  // Inside a scan, a Shared the scan has updated reads as its latest update.
  for (auto s = scopes_.rbegin(); s != scopes_.rend(); ++s)
    for (const auto& [who, node] : (*s)->overrides)
      if (who == shared.identity()) return handle(node);
  const bool wants_grad = is_floating(shared.dtype()) && grad_enabled();
  // Reads of one Shared share a node, unless the value changed since (a new version) or
  // the earlier read was made under NoGrad and this one wants a gradient.
  for (auto r = shared_reads_.rbegin(); r != shared_reads_.rend(); ++r) {
    if (!(r->shared == shared)) continue;
    if (r->version != shared.version() || (wants_grad && !nodes_[r->node].requires_grad)) break;
    check_strict("scan", std::span<const std::uint32_t>(&r->node, 1));
    return handle(r->node);
  }
  if (strict_scopes_ > 0)
    fail<ValueError>("scan", "strict: the step function reads shared variable '", shared.name(), "' of shape ",
                     to_string(shared.shape()), ", which was not passed in non_sequences");
  auto [value, version] = shared.snapshot();
  Var v = push(std::move(value), {}, {}, wants_grad);
  nodes_[v.id()].shared_read = static_cast<std::int32_t>(shared_reads_.size());
  shared_reads_.push_back({v.id(), shared, version});
  return v;
}

void Tape::truncate(std::uint32_t size) {
  while (nodes_.size() > size) nodes_.pop_back();
  while (!segments_.empty() && segments_.back().end > size) segments_.pop_back();
  while (!shared_reads_.empty() && shared_reads_.back().node >= size) shared_reads_.pop_back();
  std::erase_if(leaf_grads_, [&](const auto& p) { return p.first >= size; });
}

void Tape::cut_gradients(std::uint32_t begin, std::uint32_t end) {
  for (std::uint32_t i = begin; i < end && i < nodes_.size(); ++i) nodes_[i].cut = true;
}

void Tape::release_values(std::uint32_t begin, std::uint32_t end, std::vector<std::uint32_t> keep) {
  std::sort(keep.begin(), keep.end());
  // A segment may enclose earlier ones (a checkpointed scan inside another): it replaces them.
  std::erase_if(segments_, [&](const Segment& s) { return s.begin >= begin && s.end <= end; });
  auto at = std::lower_bound(segments_.begin(), segments_.end(), begin,
                             [](const Segment& s, std::uint32_t b) { return s.begin < b; });
  release(*segments_.insert(at, Segment{begin, end, std::move(keep)}));
}

void Tape::release(Segment& seg) {
  for (std::uint32_t i = seg.begin; i < seg.end; ++i) {
    detail::Node& n = nodes_[i];
    if (n.op && !std::binary_search(seg.keep.begin(), seg.keep.end(), i)) {
      n.value = Tensor();
      n.op.drop_saved();
    }
  }
  seg.materialized = false;
}

void Tape::rematerialize(Segment& seg) {
  boost::container::small_vector<const Tensor*, 4> in;
  for (std::uint32_t i = seg.begin; i < seg.end; ++i) {
    detail::Node& n = nodes_[i];
    if (n.value.defined()) continue;
    in.clear();
    for (std::uint32_t j : n.inputs) {
      if (!nodes_[j].value.defined()) ensure_value(j);  // an input from an earlier segment
      in.push_back(&nodes_[j].value);
    }
    n.value = n.op.replay(InputList<Tensor>(in.data(), in.size()));
  }
  seg.materialized = true;
}

void Tape::ensure_value(std::uint32_t id) {
  auto it = std::upper_bound(segments_.begin(), segments_.end(), id,
                             [](std::uint32_t i, const Segment& s) { return i < s.begin; });
  if (it == segments_.begin() || id >= std::prev(it)->end)
    fail<ValueError>("backward", "the value of node ", id, " was released and belongs to no checkpoint segment");
  rematerialize(*std::prev(it));
}

void Tape::release_segments_above(std::uint32_t i) {
  for (auto& seg : segments_)
    if (seg.materialized && seg.begin > i) release(seg);
}

void Tape::share_value(std::uint32_t id, const Tensor& view) {
  detail::Node& n = nodes_[id];
  if (n.value.defined() && (n.value.shape() != view.shape() || n.value.dtype() != view.dtype()))
    fail<ShapeError>("share_value", "node ", id, " holds ", n.value.dtype(), " of shape ", to_string(n.value.shape()),
                     ", the view is ", view.dtype(), " of shape ", to_string(view.shape()));
  n.value = view;
}

void ScanScope::set_override(const Shared& shared, std::uint32_t node) {
  for (auto& [who, id] : overrides)
    if (who == shared.identity()) {
      id = node;
      return;
    }
  overrides.emplace_back(shared.identity(), node);
}

void ScanScope::update(const Shared& shared, const Var& value) {
  set_override(shared, value.id());
  for (auto& [who, v] : implicit_updates)
    if (who == shared) {
      v = value;
      return;
    }
  implicit_updates.emplace_back(shared, value);
}

void Tape::push_scope(ScanScope* scope) {
  scopes_.push_back(scope);
  if (scope->strict) ++strict_scopes_;
}

void Tape::pop_scope() {
  if (scopes_.back()->strict) --strict_scopes_;
  scopes_.pop_back();
}

void Tape::check_strict_slow(std::string_view op, std::span<const std::uint32_t> inputs) const {
  // The innermost strict scope decides; an enclosing scan's nodes count as outer for it.
  const ScanScope* scope = nullptr;
  for (auto s = scopes_.rbegin(); s != scopes_.rend() && !scope; ++s)
    if ((*s)->strict) scope = *s;
  for (std::uint32_t id : inputs) {
    if (id >= scope->begin) continue;
    if (std::find(scope->allowed.begin(), scope->allowed.end(), id) != scope->allowed.end()) continue;
    const Tensor& v = nodes_[id].value;
    fail<ValueError>(op, "strict scan: the step function uses a variable (", v.dtype(), " of shape ",
                     to_string(v.shape()), ") that was not passed to scan; pass it in non_sequences");
  }
}

Tensor Tape::leaf_grad(std::uint32_t id) const {
  for (const auto& [node, g] : leaf_grads_)
    if (node == id) return g;
  const Tensor& v = nodes_[id].value;
  return zeros(v.shape(), v.dtype());
}

std::size_t Tape::bytes_held() const {
  std::unordered_set<const Storage*> seen;
  std::size_t bytes = 0;
  auto count = [&](const Tensor& v) {
    if (v.defined() && seen.insert(v.storage().get()).second) bytes += v.storage()->bytes();
  };
  for (std::uint32_t i = 0; i < nodes_.size(); ++i) {
    count(nodes_[i].value);
    if (nodes_[i].op)
      for (const Tensor& t : nodes_[i].op.saved()) count(t);
  }
  return bytes;
}

void Tape::check_owned(std::string_view op, std::string_view what, const Var& v) const {
  if (!v.defined()) fail<TapeError>(op, what, " is an undefined Var");
  v.tape();  // throws for a destroyed tape
  if (!owns(v)) fail<TapeError>(op, what, " belongs to another tape");
}

void Tape::check_versions(std::string_view op, std::span<const Var> outputs) const {
  std::uint32_t hi = 0;
  for (const Var& o : outputs) hi = std::max(hi, o.id());
  // A read that needs no gradient (a random stream's int64 state) receives none: its
  // change cannot make backward accumulate into a value that moved on.
  std::vector<const SharedRead*> stale;
  for (const auto& r : shared_reads_)
    if (r.node <= hi && nodes_[r.node].requires_grad && r.shared.version() != r.version) stale.push_back(&r);
  if (stale.empty()) return;
  // Only a stale read on the way from the output matters (one read again after a change
  // leaves the old read behind, unused): mark what the output depends on, then check.
  std::vector<std::uint8_t> reached(hi + 1, 0);
  for (const Var& o : outputs) reached[o.id()] = 1;
  for (std::uint32_t i = hi + 1; i-- > 0;)
    if (reached[i])
      for (std::uint32_t in : nodes_[i].inputs) reached[in] = 1;
  for (const SharedRead* r : stale)
    if (reached[r->node])
      fail<VersionError>(op, "shared variable '", r->shared.name(), "' of shape ", to_string(r->shared.shape()),
                         " was changed (version ", r->version, " -> ", r->shared.version(),
                         ") after this tape read it; its backward pass would use a stale value");
}

template <class G>
void Tape::propagate(std::vector<G>& grads, std::uint32_t lo, std::uint32_t hi,
                     const std::vector<std::int32_t>& keep, std::vector<G>* kept, bool to_leaves) {
  const bool has_segments = !segments_.empty();
  for (std::uint32_t i = hi + 1; i-- > lo;) {
    if (has_segments) release_segments_above(i);
    if (!is_defined(grads[i])) continue;
    G g = std::move(grads[i]);
    grads[i] = G();
    if (kept && keep[i] >= 0) (*kept)[keep[i]] = g;
    detail::Node& n = nodes_[i];
    if (n.cut && n.op) continue;  // leaves (Shared reads) always receive their gradient
    if (has_segments) {
      if (n.op && !n.value.defined()) ensure_value(i);
      for (std::uint32_t in : n.inputs)
        if (!nodes_[in].value.defined()) ensure_value(in);
    }
    if (!n.op) {
      if (!to_leaves) continue;
      if constexpr (std::is_same_v<G, Tensor>) {
        if (n.shared_read >= 0) {
          shared_reads_[n.shared_read].shared.accumulate_grad(g);
        } else if (n.is_variable) {
          auto it = std::find_if(leaf_grads_.begin(), leaf_grads_.end(), [&](auto& p) { return p.first == i; });
          if (it == leaf_grads_.end()) leaf_grads_.emplace_back(i, g);
          else accumulate_into(it->second, g);
        }
      }
      continue;
    }
    const std::size_t k = n.inputs.size();
    // Tensor mode reads the node values in place; Var mode needs handles made here.
    boost::container::small_vector<G, 4> handles;
    boost::container::small_vector<const G*, 4> inputs;
    boost::container::small_vector<std::uint8_t, 4> needs;
    for (std::uint32_t in : n.inputs) {
      if constexpr (std::is_same_v<G, Tensor>) inputs.push_back(&nodes_[in].value);
      else handles.push_back(handle(in));
      needs.push_back(in >= lo && nodes_[in].requires_grad);
    }
    if constexpr (!std::is_same_v<G, Tensor>)
      for (const auto& h : handles) inputs.push_back(&h);
    G out_handle;
    if constexpr (!std::is_same_v<G, Tensor>) out_handle = handle(i);
    const G& out = [&]() -> const G& {
      if constexpr (std::is_same_v<G, Tensor>) return n.value;
      else return out_handle;
    }();
    detail::GradSink* sink = nullptr;
    std::optional<InputGrads> input_grads;
    if constexpr (std::is_same_v<G, Tensor>) sink = &input_grads.emplace(grads, nodes_, n);
    const BackwardArgs<G> args{g, InputList<G>(inputs.data(), k), out,
                               std::span<const std::uint8_t>(needs.data(), k), sink};
    Grads<G> gs = n.op.backward(args);
    if (has_segments)  // a backward that ran a pass of its own (create_graph) may have released them
      for (std::uint32_t in : n.inputs)
        if (!nodes_[in].value.defined()) ensure_value(in);
    for (std::size_t j = 0; j < k && j < gs.size(); ++j) {
      if (!needs[j] || !is_defined(gs[j])) continue;
      const Tensor& in_value = nodes_[n.inputs[j]].value;
      const Tensor& gv = value_of(gs[j]);
      if (gv.shape() != in_value.shape() || gv.dtype() != in_value.dtype())
        fail<GradientError>(n.op.name(), "backward produced a ", gv.dtype(), " gradient of shape ",
                            to_string(gv.shape()), " for input ", j, " of ", in_value.dtype(), " shape ",
                            to_string(in_value.shape()));
      accumulate(grads[n.inputs[j]], std::move(gs[j]));
    }
  }
  if (has_segments)
    for (auto& seg : segments_)
      if (seg.materialized) release(seg);
}

void Tape::backward(const Var& loss) {
  check_owned("backward", "the loss", loss);
  const Tensor& v = loss.value();
  if (v.numel() != 1)
    fail<GradientError>("backward", "the loss has shape ", to_string(v.shape()),
                        "; backward of a non-scalar needs a grad_output of that shape");
  backward(loss, ones(v.shape(), v.dtype()));
}

void Tape::backward(const Var& output, const Tensor& grad_output) {
  check_owned("backward", "the output", output);
  const Tensor& v = output.value();
  if (!grad_output.defined()) fail<ValueError>("backward", "grad_output is undefined (output of shape ", to_string(v.shape()), ")");
  if (grad_output.shape() != v.shape() || grad_output.dtype() != v.dtype())
    fail<ShapeError>("backward", "grad_output is ", grad_output.dtype(), " of shape ",
                     to_string(grad_output.shape()), " but the output is ", v.dtype(), " of shape ",
                     to_string(v.shape()));
  if (!requires_grad(output.id()))
    fail<GradientError>("backward", "the output does not depend on any variable or Shared that needs a gradient");
  check_versions("backward", std::span<const Var>(&output, 1));
  std::vector<Tensor> grads(output.id() + 1);
  grads[output.id()] = grad_output;
  propagate(grads, 0, output.id(), {}, static_cast<std::vector<Tensor>*>(nullptr), true);
}

std::vector<Var> Tape::grad(std::span<const Var> outputs, std::span<const Var> inputs,
                            std::span<const Tensor> grad_outputs, GradOptions options) {
  if (outputs.empty()) fail<ValueError>("grad", "no outputs given");
  if (!grad_outputs.empty() && grad_outputs.size() != outputs.size())
    fail<ValueError>("grad", outputs.size(), " outputs but ", grad_outputs.size(), " grad_outputs");
  std::uint32_t hi = 0, lo = nodes_.size();
  for (std::size_t k = 0; k < outputs.size(); ++k) {
    check_owned("grad", "an output", outputs[k]);
    const Tensor& v = outputs[k].value();
    if (grad_outputs.empty() && v.numel() != 1)
      fail<GradientError>("grad", "output ", k, " has shape ", to_string(v.shape()),
                          "; pass grad_outputs for non-scalar outputs");
    if (!grad_outputs.empty() && !grad_outputs[k].defined())
      fail<ValueError>("grad", "grad_outputs[", k, "] is undefined (output ", k, " has shape ", to_string(v.shape()), ")");
    if (!grad_outputs.empty() && (grad_outputs[k].shape() != v.shape() || grad_outputs[k].dtype() != v.dtype()))
      fail<ShapeError>("grad", "grad_outputs[", k, "] is ", grad_outputs[k].dtype(), " of shape ",
                       to_string(grad_outputs[k].shape()), " but output ", k, " is ", v.dtype(), " of shape ",
                       to_string(v.shape()));
    hi = std::max(hi, outputs[k].id());
  }
  for (const auto& in : inputs) {
    check_owned("grad", "an input", in);
    lo = std::min(lo, in.id());
  }
  check_versions("grad", outputs);
  std::vector<std::int32_t> keep(hi + 1, -1);
  std::vector<std::uint32_t> unique_inputs;
  for (const auto& in : inputs)
    if (in.id() <= hi && keep[in.id()] < 0) {
      keep[in.id()] = static_cast<std::int32_t>(unique_inputs.size());
      unique_inputs.push_back(in.id());
    }
  auto seed = [&](std::size_t k) {
    const Tensor& v = outputs[k].value();
    return grad_outputs.empty() ? ones(v.shape(), v.dtype()) : grad_outputs[k];
  };
  std::vector<Var> result;
  auto finish = [&](auto& kept) {
    for (const auto& in : inputs) {
      const std::int32_t slot = in.id() <= hi ? keep[in.id()] : -1;
      if (slot >= 0 && is_defined(kept[slot])) {
        if constexpr (std::is_same_v<std::decay_t<decltype(kept[slot])>, Var>) result.push_back(kept[slot]);
        else result.push_back(constant(kept[slot]));
      } else {
        result.push_back(constant(zeros(in.shape(), in.dtype())));
      }
    }
  };
  if (options.create_graph) {
    std::vector<Var> grads(hi + 1), kept(unique_inputs.size());
    for (std::size_t k = 0; k < outputs.size(); ++k) accumulate(grads[outputs[k].id()], constant(seed(k)));
    propagate(grads, lo, hi, keep, &kept, false);
    finish(kept);
  } else {
    std::vector<Tensor> grads(hi + 1), kept(unique_inputs.size());
    for (std::size_t k = 0; k < outputs.size(); ++k) accumulate(grads[outputs[k].id()], seed(k));
    propagate(grads, lo, hi, keep, &kept, false);
    finish(kept);
  }
  return result;
}

// ---- free functions -------------------------------------------------------------------

void backward(const Var& loss) { loss.tape().backward(loss); }

std::vector<Var> grad(std::span<const Var> outputs, std::span<const Var> inputs,
                      std::span<const Tensor> grad_outputs, GradOptions options) {
  if (outputs.empty()) fail<ValueError>("grad", "no outputs given");
  return outputs[0].tape().grad(outputs, inputs, grad_outputs, options);
}

Var grad(const Var& output, const Var& input, GradOptions options) {
  return grad(std::span<const Var>(&output, 1), std::span<const Var>(&input, 1), {}, options)[0];
}

Var detach(const Var& v) { return v.tape().constant(v.value()); }

}  // namespace recur
