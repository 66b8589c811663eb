#pragma once
// record(): the one place where an op meets the tape. It checks that all inputs are live
// Vars of one tape, runs the op's forward on their values (if that throws, nothing is
// recorded), and pushes a node that keeps the op for backward. Under NoGrad, or when no
// input needs a gradient, the node keeps only the value.
#include <array>
#include <new>
#include <span>
#include <stdexcept>
#include <utility>
#include <vector>

#include <recur/core/small_vector.hpp>

#include <recur/autodiff/no_grad.hpp>
#include <recur/autodiff/tape_access.hpp>

namespace recur {
namespace detail {
// The tape all `inputs` live on; TapeError naming `op` for an undefined Var, a destroyed
// tape or two different tapes.
Tape& common_tape(std::string_view op, std::span<const Var* const> inputs);
}  // namespace detail

template <class Op, class... Vs>
Var record(Op op, const Vs&... inputs) {
  static_assert((std::is_same_v<Vs, Var> && ...), "record() takes Vars");
  const std::array<const Var*, sizeof...(Vs)> ptrs{&inputs...};
  Tape& tape = detail::common_tape(Op::name, ptrs);
  const std::array<std::uint32_t, sizeof...(Vs)> ids{inputs.id()...};
  TapeAccess::check_inputs(tape, Op::name, ids);
  Tensor out = op.forward(TapeAccess::node_value(tape, inputs.id())...);
  const bool needs = grad_enabled() && (TapeAccess::requires_grad(tape, inputs.id()) || ...);
  const bool keep = needs || TapeAccess::keeps_all_ops(tape);
  return TapeAccess::push(tape, std::move(out), ids,
                          keep ? detail::OpBox::make<sizeof...(Vs)>(std::move(op)) : detail::OpBox(), needs);
}

// For an op whose result takes no gradient, whatever its inputs (a comparison's mask,
// detach): a constant on the inputs' tape. While a loop captures its step
// (TapeAccess::keep_all_ops) the node keeps its op, so that the step's program computes it
// again at every step instead of taking the first step's value for a constant. The op's
// backward rule gives no gradient.
template <class Op, class... Vs>
Var record_without_gradient(Op op, const Vs&... inputs) {
  static_assert((std::is_same_v<Vs, Var> && ...), "record_without_gradient() takes Vars");
  const std::array<const Var*, sizeof...(Vs)> ptrs{&inputs...};
  Tape& tape = detail::common_tape(Op::name, ptrs);
  Tensor out = op.forward(TapeAccess::node_value(tape, inputs.id())...);
  if (!TapeAccess::keeps_all_ops(tape)) return tape.constant(std::move(out));
  const std::array<std::uint32_t, sizeof...(Vs)> ids{inputs.id()...};
  return TapeAccess::push(tape, std::move(out), ids, detail::OpBox::make<sizeof...(Vs)>(std::move(op)), false);
}

namespace detail {
// record_list's node; after_forward(op) runs between the forward and the push.
template <class Op, class AfterForward>
Var record_list_node(Op& op, std::span<const Var> inputs, AfterForward&& after_forward) {
  boost::container::small_vector<const Var*, 8> ptrs;
  for (const auto& v : inputs) ptrs.push_back(&v);
  Tape& tape = detail::common_tape(Op::name, std::span<const Var* const>(ptrs.data(), ptrs.size()));
  boost::container::small_vector<Tensor, 8> values;
  boost::container::small_vector<std::uint32_t, 8> ids;
  bool needs = false;
  for (const auto& v : inputs) {
    values.push_back(TapeAccess::node_value(tape, v.id()));
    ids.push_back(v.id());
    needs = needs || TapeAccess::requires_grad(tape, v.id());
  }
  needs = needs && grad_enabled();
  TapeAccess::check_inputs(tape, Op::name, std::span<const std::uint32_t>(ids.data(), ids.size()));
  Tensor out = op.forward(std::span<const Tensor>(values.data(), values.size()));
  after_forward(std::as_const(op));
  const bool keep = needs || TapeAccess::keeps_all_ops(tape);
  return TapeAccess::push(tape, std::move(out), std::span<const std::uint32_t>(ids.data(), ids.size()),
                          keep ? detail::OpBox::make<detail::kListArity>(std::move(op)) : detail::OpBox(), needs);
}
}  // namespace detail

// For ops with a variable number of inputs: Op::forward takes std::span<const Tensor>.
template <class Op>
Var record_list(Op op, std::span<const Var> inputs) {
  return detail::record_list_node(op, inputs, [](const Op&) {});
}

// For ops with several outputs, one node each: Op::forward (as for record_list) returns the
// first and `std::vector<Tensor> Op::more_outputs() const`, called right after it, the
// others. Backward runs the op's rule once, with the gradients of all of them
// (BackwardArgs::more_grads), however many reached the op. The other outputs' nodes keep
// their values for good (replaying the op, as a released checkpoint segment does,
// remakes only the first).
template <class Op>
std::vector<Var> record_outputs(Op op, std::span<const Var> inputs) {
  std::vector<Tensor> more;
  std::vector<Var> outputs{detail::record_list_node(op, inputs, [&](const Op& o) { more = o.more_outputs(); })};
  Tape& tape = outputs[0].tape();
  for (std::size_t k = 0; k < more.size(); ++k)
    outputs.push_back(TapeAccess::push_output(tape, std::move(more[k]), outputs[0].id(), k + 1));
  return outputs;
}

// Runs f(), a composite op that records several nodes on `tape`; if it throws, the nodes it
// recorded are dropped, so a failed op leaves the tape unchanged like a single op does.
// Memory running out anywhere inside (a std::bad_alloc from a container as much as from a
// tensor) is a MemoryError, after the rollback; the rollback itself does not throw.
template <class F>
auto transactional(Tape& tape, F&& f) {
  const auto size = tape.size();
  try {
    return f();
  } catch (const std::bad_alloc&) {
    TapeAccess::truncate(tape, size);
    fail<MemoryError>("tape", "out of memory (std::bad_alloc) while recording; what was recorded is rolled back");
  } catch (const std::length_error& e) {  // a container asked for more than it can hold
    TapeAccess::truncate(tape, size);
    fail<MemoryError>("tape", "a buffer larger than memory can address was asked for (", e.what(), "); rolled back");
  } catch (...) {
    TapeAccess::truncate(tape, size);
    throw;
  }
}
// The same for code generic over Tensor (nothing to undo) and Var.
template <class F>
auto transactional(const Tensor&, F&& f) {
  return f();
}
template <class F>
auto transactional(const Var& anchor, F&& f) {
  return transactional(anchor.tape(), std::forward<F>(f));
}

// A Tensor as a value of the same kind as `like`: the tensor itself when V is Tensor, a
// constant on like's tape when V is Var. Lets one backward rule serve both.
inline const Tensor& lift(const Tensor& /*like*/, const Tensor& t) { return t; }
inline Var lift(const Var& like, const Tensor& t) { return like.tape().constant(t); }
inline const Tensor& value_of(const Tensor& t) { return t; }
inline const Tensor& value_of(const Var& v) { return v.value(); }

}  // namespace recur
