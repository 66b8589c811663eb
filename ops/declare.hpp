#pragma once
// How an op family's header declares its public functions: every name in the list gets a
// form on Tensors (values only) and one on Vars (recorded). For example
//   RECUR_DECLARE_UNARY_OPS(exp, log)
// declares Tensor exp(const Tensor& x), Var exp(const Var& x), and the same for log;
// RECUR_DECLARE_BINARY_OPS(add) declares Tensor add(const Tensor& a, const Tensor& b) and
// Var add(const Var& a, const Var& b). The .cpp defines them with RECUR_EXPOSE_FAMILY
// (ops/define.hpp).
#include <boost/preprocessor/seq/for_each.hpp>
#include <boost/preprocessor/variadic/to_seq.hpp>

#define RECUR_DETAIL_DECLARE_UNARY(r, unused, fn) \
  Tensor fn(const Tensor& x);                     \
  Var fn(const Var& x);
#define RECUR_DETAIL_DECLARE_BINARY(r, unused, fn) \
  Tensor fn(const Tensor& a, const Tensor& b);     \
  Var fn(const Var& a, const Var& b);

#define RECUR_DECLARE_UNARY_OPS(...) \
  BOOST_PP_SEQ_FOR_EACH(RECUR_DETAIL_DECLARE_UNARY, ~, BOOST_PP_VARIADIC_TO_SEQ(__VA_ARGS__))
#define RECUR_DECLARE_BINARY_OPS(...) \
  BOOST_PP_SEQ_FOR_EACH(RECUR_DETAIL_DECLARE_BINARY, ~, BOOST_PP_VARIADIC_TO_SEQ(__VA_ARGS__))
