#pragma once
// Helpers for writing ops. An op file defines a struct (name, forward, backward side by
// side; see autodiff/op_box.hpp) and exposes it twice: on Tensors (values only) and on
// Vars (recorded). RECUR_EXPOSE_* write those two one-line definitions.
#include <boost/preprocessor/seq/for_each.hpp>
#include <boost/preprocessor/tuple/elem.hpp>
#include <boost/preprocessor/variadic/to_seq.hpp>

#include <recur/autodiff/record.hpp>
#include <recur/core/elementwise.hpp>

// Tensor f(const Tensor&) and Var f(const Var&) for an op struct built from the arguments.
#define RECUR_EXPOSE_UNARY(fn, OpExpr)                           \
  Tensor fn(const Tensor& x) { return (OpExpr).forward(x); } \
  Var fn(const Var& x) { return record(OpExpr, x); }

#define RECUR_EXPOSE_BINARY(fn, OpExpr)                                                      \
  Tensor fn(const Tensor& a, const Tensor& b) { return (OpExpr).forward(a, b); } \
  Var fn(const Var& a, const Var& b) { return record(OpExpr, a, b); }

// One RECUR_EXPOSE_UNARY or RECUR_EXPOSE_BINARY per member of a family template:
//   RECUR_EXPOSE_FAMILY(RECUR_EXPOSE_UNARY, Unary, (exp, ExpF), (log, LogF))
// is RECUR_EXPOSE_UNARY(exp, Unary<ExpF>{}) RECUR_EXPOSE_UNARY(log, Unary<LogF>{}).
#define RECUR_DETAIL_EXPOSE_MEMBER(r, expose_and_family, name_and_functor)                 \
  BOOST_PP_TUPLE_ELEM(2, 0, expose_and_family)                                             \
  (BOOST_PP_TUPLE_ELEM(2, 0, name_and_functor),                                            \
   BOOST_PP_TUPLE_ELEM(2, 1, expose_and_family) < BOOST_PP_TUPLE_ELEM(2, 1, name_and_functor) > {})
#define RECUR_EXPOSE_FAMILY(expose, Family, ...) \
  BOOST_PP_SEQ_FOR_EACH(RECUR_DETAIL_EXPOSE_MEMBER, (expose, Family), BOOST_PP_VARIADIC_TO_SEQ(__VA_ARGS__))

namespace recur {
// For rules whose gradient is a small part of a large input: in plain backward, calls
// add(acc) with the input's accumulated gradient to add into it in place, and returns
// true (the rule then returns no tensor for that input). Under create_graph returns
// false: the rule builds its gradient with ops as usual.
template <class V, class Add>
bool add_in_place(const BackwardArgs<V>& a, std::size_t input, Add&& add) {
  if constexpr (std::is_same_v<V, Tensor>) {
    if (a.sink) {
      add(a.sink->dense(input));
      return true;
    }
  }
  return false;
}
// The same for a rule whose gradient is rows [begin, end) of the input's axis 0 and zero
// elsewhere: calls add(acc, fresh), where `fresh` says those rows hold no gradient yet and
// must be written, not added to (GradSink::dense_rows).
template <class V, class Add>
bool add_rows_in_place(const BackwardArgs<V>& a, std::size_t input, std::int64_t begin, std::int64_t end, Add&& add) {
  if constexpr (std::is_same_v<V, Tensor>) {
    if (a.sink) {
      bool fresh = false;
      Tensor& acc = a.sink->dense_rows(input, begin, end, fresh);
      add(acc, fresh);
      return true;
    }
  }
  return false;
}

// Runs an op on values (V = Tensor) or records it (V = Var): how a backward rule uses an
// op that has no public function of its own (scatters, segment ops).
template <class Op, class V, class... Rest>
V apply_op(Op op, const V& x, const Rest&... rest) {
  if constexpr (std::is_same_v<V, Tensor>) {
    return op.forward(x, rest...);
  } else {
    return record(std::move(op), x, rest...);
  }
}
}  // namespace recur
