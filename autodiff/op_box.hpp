#pragma once
// How an op is kept on the tape. An op is a small struct with
//   `static constexpr std::string_view name;`
//   `Tensor forward(const Tensor&...) const;`               (or `forward(std::span<const Tensor>)`,
//                                       and optionally `forward_list(const InputList<Tensor>&)`,
//                                       which replays it on the inputs without copying them)
//   `template <class V> Grads<V> backward(const BackwardArgs<V>&) const;`
//   `OpAttributes attributes() const;`  its parameters by name (autodiff/op_attributes.hpp);
//                                       an op without data members has none and may omit it
//   `static constexpr bool elementwise = true;`  (optional) each output element depends on
//                                       the same element of the (broadcast) inputs only: the
//                                       op runs unchanged on inputs with a leading axis more
//   `bool backward_reads(std::size_t which) const;`  (optional) false where the plain backward
//                                       rule reads only the shape of input `which` (or of the
//                                       output, which = kBackwardOutput); without it, all is read
//   `static constexpr bool remakes_saved = true;`  (optional) its backward makes the tensors
//                                       drop_saved() dropped again from its inputs, on its own:
//                                       bit for bit the same, and once they are dropped its
//                                       backward_reads says true for every input it then reads
// backward is written once with recur's own ops and instantiated twice: with V = Tensor
// (plain backward: values only, nothing recorded) and V = Var (create_graph: the backward
// computation is itself recorded, so gradients of gradients work).
#include <concepts>
#include <cstdint>
#include <new>
#include <optional>
#include <span>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include <recur/autodiff/op_attributes.hpp>
#include <recur/autodiff/var.hpp>
#include <recur/core/small_vector.hpp>
#include <recur/core/tensor.hpp>

namespace recur {



template <class V>
using Grads = boost::container::small_vector<V, 3>;

// The inputs of an op as seen by its backward rule: indexable like an array of V, but held
// by pointer, so the tape hands over its node values without copying them.
template <class V>
class InputList {
 public:
  InputList(const V* const* items, std::size_t n) : items_(items), n_(n) {}
  const V& operator[](std::size_t i) const { return *items_[i]; }
  std::size_t size() const { return n_; }

 private:
  const V* const* items_;
  std::size_t n_;
};

namespace detail {
// Lets a plain (V = Tensor) backward rule add into an input's accumulated gradient in
// place instead of returning a dense tensor: the gradient of x[t] or of an embedding row
// touches a small part of a large input, and T dense full-size gradients would make a
// loop over T steps quadratic.
class GradSink {
 public:
  // The input's gradient so far: a dense buffer of its shape, zero where nothing was
  // added yet, that no other tensor shares.
  virtual Tensor& dense(std::size_t input) = 0;
  // The same, for a rule whose gradient is rows [begin, end) of the input's axis 0 and zero
  // elsewhere (x[t], a window of steps). `fresh` is set when those rows hold no gradient yet
  // and were not zeroed: they may hold anything, and the rule must write them, not add to
  // them. A loop's steps each write their own row of a sequence's gradient, which then never
  // needs zeroing first.
  virtual Tensor& dense_rows(std::size_t input, std::int64_t begin, std::int64_t end, bool& fresh) = 0;
  // Which backward pass this is (distinct for every pass a process runs): a rule that
  // defers work to a later node of the same pass (a loop's batched weight gradient) tells
  // its own pass from an earlier one that stopped half-way.
  virtual std::uint64_t pass() const = 0;
  // Adds g to the input's gradient as the pass adds a rule's result (taken where no share
  // reached it yet, else added): a rule that runs a loop's steps inside one node hands each
  // step's share over in the order a node per step would have.
  virtual void add(std::size_t input, Tensor g) = 0;

 protected:
  ~GradSink() = default;
};
}  // namespace detail

template <class V>
struct BackwardArgs {
  const V& grad;                        // gradient with respect to the op's output
  InputList<V> inputs;                  // the op's inputs (values, or Vars under create_graph)
  const V& output;                      // the op's output
  std::span<const std::uint8_t> needs;  // needs[i]: input i wants a gradient
  detail::GradSink* sink = nullptr;     // plain backward only; see add_in_place (ops/define.hpp)
  // An op with several outputs (record_outputs, autodiff/record.hpp): grad and output are
  // its first; more_grads[k - 1] the gradient of output k, undefined where none reached it
  // (the rule reads that as zero; grad is then zeros).
  std::span<const V> more_grads{};
  bool needs_grad(std::size_t i) const { return needs[i] != 0; }
};

namespace detail {

class OpBox;

struct OpVTable {
  std::string_view name;
  // Runs forward again on the same inputs: recomputation of released values (a loop's
  // checkpoints) gets the bit-identical result.
  Tensor (*replay)(const void* op, const InputList<Tensor>&);
  Grads<Tensor> (*backward_values)(const void* op, const BackwardArgs<Tensor>&);
  Grads<Var> (*backward_vars)(const void* op, const BackwardArgs<Var>&);
  // Tensors the op keeps for its backward besides the node values (an op that has a
  // `Grads<Tensor> saved_tensors() const` says which); counted by Tape::bytes_held.
  Grads<Tensor> (*saved)(const void* op);
  // Drops those tensors (a released checkpoint segment); the op's replay makes them again.
  void (*drop_saved)(const void* op);
  void (*relocate)(void* dst, void* src);  // move-construct into dst, destroy src
  void (*destroy)(void* storage);
  // The op's parameters (op_attributes.hpp); nullopt for an op with data members that does
  // not say what they are (the coverage test of tests/test_op_attributes.cpp fails on one in ops/).
  // Last: the entries recording and backward use stay within the table's first 64 bytes.
  std::optional<OpAttributes> (*attributes)(const void* op);
  // A copy of the op in `dst`; nullptr for an op that cannot be copied. A captured loop
  // step (ops/scan/step_program_detail.hpp) records its ops again from copies. An op whose
  // copies would share state its forward writes (saved tensors behind a pointer) defines
  // `O fresh_copy() const`, used instead of its copy constructor.
  void (*clone)(OpBox& dst, const void* op);
  // A multi-output op's outputs after the first, right after forward (record_outputs);
  // empty for an op with one output.
  std::vector<Tensor> (*more_outputs)(const void* op);
  // Whether the op's plain backward reads the elements of input `which`, or with
  // kBackwardOutput of its output (shapes and dtypes it may always read). A captured loop
  // drops the buffers no rule reads once forward is past them (TapeAccess::drop_unread_value).
  bool (*backward_reads)(const void* op, std::size_t which);
  bool elementwise;  // the op says so (see the top of this file)
  // The op says so (see the top of this file): a checkpoint that keeps the op's value (a
  // loop's output) may still drop its saved tensors; without it only a released node's go.
  bool remakes_saved;
  // The op object itself (OpBox::as).
  const void* (*object)(const void* storage);
};

// backward_reads' `which` for the op's output.
inline constexpr std::size_t kBackwardOutput = static_cast<std::size_t>(-1);
// What an op that does not say (no `bool backward_reads(std::size_t) const`) reads: everything.
bool reads_everything(const void* op, std::size_t which);

// What an op without data members says of its parameters (none), and what one with data
// members and no attributes() says (nullopt: it cannot describe them).
std::optional<OpAttributes> no_parameters(const void* op);
std::optional<OpAttributes> undescribed_parameters(const void* op);
// What an op with one output says of its other outputs (none).
std::vector<Tensor> single_output(const void* op);

// Arity of an op recorded with record_list (forward takes a span).
inline constexpr std::size_t kListArity = static_cast<std::size_t>(-1);

// forward called on the inputs again, for an op of the given arity.
template <class O, std::size_t Arity>
Tensor replay_forward(const O& op, const InputList<Tensor>& in) {
  if constexpr (Arity == kListArity && requires { op.forward_list(in); }) {
    return op.forward_list(in);  // takes the inputs where they are
  } else if constexpr (Arity == kListArity) {
    boost::container::small_vector<Tensor, 8> values;
    for (std::size_t i = 0; i < in.size(); ++i) values.push_back(in[i]);
    return op.forward(std::span<const Tensor>(values.data(), values.size()));
  } else {
    return [&]<std::size_t... I>(std::index_sequence<I...>) { return op.forward(in[I]...); }(
        std::make_index_sequence<Arity>{});
  }
}

// Type-erased op with small-buffer storage: most ops (an axis, a shape, a flag) fit inline
// and cost no allocation when recorded.
class OpBox {
 public:
  static constexpr std::size_t kInline = 64;

  OpBox() = default;
  template <std::size_t Arity, class Op>
  static OpBox make(Op&& op) {
    using O = std::decay_t<Op>;
    OpBox box;
    if constexpr (fits<O>) {
      new (box.buf_) O(std::forward<Op>(op));
      box.vt_ = &table<O, Arity, InlineStorage<O>>;
    } else {
      *reinterpret_cast<O**>(box.buf_) = new O(std::forward<Op>(op));
      box.vt_ = &table<O, Arity, HeapStorage<O>>;
    }
    return box;
  }
  OpBox(OpBox&& o) noexcept : vt_(o.vt_) {
    if (vt_) vt_->relocate(buf_, o.buf_);
    o.vt_ = nullptr;
  }
  OpBox& operator=(OpBox&& o) noexcept {
    if (this != &o) {
      reset();
      vt_ = o.vt_;
      if (vt_) vt_->relocate(buf_, o.buf_);
      o.vt_ = nullptr;
    }
    return *this;
  }
  OpBox(const OpBox&) = delete;
  OpBox& operator=(const OpBox&) = delete;
  ~OpBox() { reset(); }

  explicit operator bool() const { return vt_ != nullptr; }
  std::string_view name() const { return vt_->name; }
  Grads<Tensor> backward(const BackwardArgs<Tensor>& a) const { return vt_->backward_values(buf_, a); }
  Grads<Var> backward(const BackwardArgs<Var>& a) const { return vt_->backward_vars(buf_, a); }
  Tensor replay(const InputList<Tensor>& in) const { return vt_->replay(buf_, in); }
  Grads<Tensor> saved() const { return vt_->saved(buf_); }
  void drop_saved() const { vt_->drop_saved(buf_); }
  std::optional<OpAttributes> attributes() const { return vt_->attributes(buf_); }
  bool copyable() const { return vt_->clone != nullptr; }
  // A copy of the op (copyable() must hold).
  OpBox clone() const {
    OpBox box;
    vt_->clone(box, buf_);
    return box;
  }
  std::vector<Tensor> more_outputs() const { return vt_->more_outputs(buf_); }
  bool backward_reads(std::size_t which) const { return vt_->backward_reads(buf_, which); }
  bool elementwise() const { return vt_->elementwise; }
  bool remakes_saved() const { return vt_->remakes_saved; }
  // The op as an O when it is one (told by its name, which no two ops share), else nullptr:
  // a captured loop runs the ops it knows on buffers of its own (ops/scan/planned_loop.cpp).
  template <class O>
  const O* as() const {
    return vt_ && vt_->name == O::name ? static_cast<const O*>(vt_->object(buf_)) : nullptr;
  }

 private:
  void reset() {
    if (vt_) vt_->destroy(buf_);
    vt_ = nullptr;
  }
  template <class O>
  static constexpr bool fits = sizeof(O) <= kInline && alignof(O) <= 16 &&
                               std::is_nothrow_move_constructible_v<O>;

  template <class O>
  static Grads<Tensor> saved_of(const O& op) {
    if constexpr (requires { op.saved_tensors(); }) return op.saved_tensors();
    else return {};
  }
  template <class O>
  static void drop_saved_of(const O& op) {
    if constexpr (requires { op.drop_saved(); }) op.drop_saved();
  }

  // The table's attributes entry. Ops without parameters of their own share one function
  // defined out of line (op_attributes.cpp): instantiating one per op grew each op file
  // enough that GCC stopped inlining the ops' forward into record() (+5% recording time).
  template <class O, class Storage>
  static constexpr auto attributes_entry() {
    using Entry = std::optional<OpAttributes> (*)(const void*);
    if constexpr (requires(const O& op) { { op.attributes() } -> std::convertible_to<OpAttributes>; })
      return Entry([](const void* p) -> std::optional<OpAttributes> { return Storage::get(p).attributes(); });
    else if constexpr (std::is_empty_v<O>)
      return Entry(&no_parameters);
    else
      return Entry(&undescribed_parameters);
  }

  // Copies are made only when a loop captures its step: kept out of line and cold, so that
  // the ops' forward stays inlined into record() (an entry per op grows each op's file).
  template <class O, std::size_t Arity, class Storage>
  [[gnu::cold, gnu::noinline]] static void clone_into(OpBox& dst, const void* p) {
    if constexpr (requires(const O& op) { { op.fresh_copy() } -> std::same_as<O>; })
      dst = make<Arity>(Storage::get(p).fresh_copy());
    else
      dst = make<Arity>(O(Storage::get(p)));
  }
  template <class O, std::size_t Arity, class Storage>
  static constexpr auto clone_entry() {
    using Entry = void (*)(OpBox&, const void*);
    if constexpr (std::is_copy_constructible_v<O>)
      return Entry(&clone_into<O, Arity, Storage>);
    else
      return Entry(nullptr);
  }
  template <class O>
  static constexpr bool is_elementwise() {
    if constexpr (requires { O::elementwise; }) return O::elementwise;
    else return false;
  }
  template <class O>
  static constexpr bool remakes_saved_of() {
    if constexpr (requires { O::remakes_saved; }) return O::remakes_saved;
    else return false;
  }
  template <class O, class Storage>
  [[gnu::cold, gnu::noinline]] static std::vector<Tensor> more_outputs_of(const void* p) {
    return Storage::get(p).more_outputs();
  }
  template <class O, class Storage>
  static constexpr auto more_outputs_entry() {
    using Entry = std::vector<Tensor> (*)(const void*);
    if constexpr (requires(const O& op) { op.more_outputs(); })
      return Entry(&more_outputs_of<O, Storage>);
    else
      return Entry(&single_output);
  }

  template <class O, class Storage>
  static constexpr auto backward_reads_entry() {
    using Entry = bool (*)(const void*, std::size_t);
    if constexpr (requires(const O& op, std::size_t w) { { op.backward_reads(w) } -> std::same_as<bool>; })
      return Entry([](const void* p, std::size_t which) { return Storage::get(p).backward_reads(which); });
    else
      return Entry(&reads_everything);
  }

  // Where an op lives: in the buffer itself, or on the heap behind a pointer in the buffer.
  template <class O>
  struct InlineStorage {
    static const O& get(const void* p) { return *static_cast<const O*>(p); }
    static void relocate(void* dst, void* src) {
      new (dst) O(std::move(*static_cast<O*>(src)));
      static_cast<O*>(src)->~O();
    }
    static void destroy(void* p) { static_cast<O*>(p)->~O(); }
  };
  template <class O>
  struct HeapStorage {
    static const O& get(const void* p) { return **static_cast<O* const*>(p); }
    static void relocate(void* dst, void* src) { *static_cast<O**>(dst) = *static_cast<O**>(src); }
    static void destroy(void* p) { delete *static_cast<O**>(p); }
  };

  template <class O, std::size_t Arity, class Storage>
  static constexpr OpVTable table{
      O::name,
      [](const void* p, const InputList<Tensor>& in) { return replay_forward<O, Arity>(Storage::get(p), in); },
      [](const void* p, const BackwardArgs<Tensor>& a) { return Storage::get(p).backward(a); },
      [](const void* p, const BackwardArgs<Var>& a) { return Storage::get(p).backward(a); },
      [](const void* p) { return saved_of(Storage::get(p)); },
      [](const void* p) { drop_saved_of(Storage::get(p)); },
      &Storage::relocate,
      &Storage::destroy,
      attributes_entry<O, Storage>(),
      clone_entry<O, Arity, Storage>(),
      more_outputs_entry<O, Storage>(),
      backward_reads_entry<O, Storage>(),
      is_elementwise<O>(),
      remakes_saved_of<O>(),
      [](const void* p) -> const void* { return &Storage::get(p); }};

  alignas(16) unsigned char buf_[kInline];
  const OpVTable* vt_ = nullptr;
};

}  // namespace detail
}  // namespace recur
