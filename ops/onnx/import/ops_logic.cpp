// Comparisons and logic: Equal, Less, Greater, Not, And, Or, Where. ONNX's bools are held
// as int64 0/1 and carry no gradient; Where is differentiable in its two branches.
#include <recur/ops/arithmetic.hpp>
#include <recur/ops/compare.hpp>
#include <recur/ops/onnx/import/op_helpers_detail.hpp>
#include <recur/ops/onnx/import/registry_detail.hpp>

namespace recur::onnx_io::detail {
namespace {

using Relation = Tensor (*)(const Tensor&, const Tensor&);

template <Relation relation>
std::vector<Var> compare_import(const NodeContext& c) {
  const Var& a = c.input(0);
  const Var& b = c.input(1);
  check_same_dtype(c, a, b);
  return {constant(relation(a.value(), b.value()).to(DType::int64))};
}

// x != 0 as float64 0/1: the truth of an ONNX bool.
Tensor truth(const Tensor& x) {
  const Tensor f = x.to(DType::float64);
  return not_equal(f, scalar_like(f, 0.0));
}

std::vector<Var> not_import(const NodeContext& c) {
  const Tensor t = truth(c.input(0).value());
  return {constant(sub(scalar_like(t, 1.0), t).to(DType::int64))};
}

template <Relation combine>
std::vector<Var> logic_import(const NodeContext& c) {
  return {constant(combine(truth(c.input(0).value()), truth(c.input(1).value())).to(DType::int64))};
}

Tensor both(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor either(const Tensor& a, const Tensor& b) { return maximum(a, b); }

std::vector<Var> where_import(const NodeContext& c) {
  const Var& a = c.input(1);
  const Var& b = c.input(2);
  check_same_dtype(c, a, b);
  return {where(constant(truth(c.input(0).value())), a, b)};
}

}  // namespace

void add_logic_ops(Registry& r) {
  r.add("Equal", {compare_import<equal>, 7});
  r.add("Less", {compare_import<less>, 7});
  r.add("Greater", {compare_import<greater>, 7});
  r.add("Not", {not_import});
  r.add("And", {logic_import<both>, 7});
  r.add("Or", {logic_import<either>, 7});
  r.add("Where", {where_import});
}

}  // namespace recur::onnx_io::detail
