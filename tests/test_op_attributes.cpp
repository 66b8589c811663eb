// Ops describe themselves (autodiff/op_attributes.hpp): every op recorded by ops/ says what
// its parameters are, and says them right. Coverage comes from the gradient table, which
// has a row for every op declared in ops/ (test_grad_table_coverage.cpp): each row is
// recorded, with its backward under create_graph (the backward ops: scatters, ...), and
// every op node on the tape must describe itself.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include <recur/autodiff/record.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "grad_table.hpp"
#include "row_runs.hpp"

namespace recur::testing {
namespace {

// The ops on `tape` that cannot say what their parameters are, as "name (row)".
void collect_undescribed(const Tape& tape, const std::string& row, std::set<std::string>& seen,
                         std::vector<std::string>& undescribed) {
  for (std::uint32_t id = 0; id < tape.size(); ++id) {
    const std::optional<OpDescription> d = tape.describe(TapeAccess::handle(tape, id));
    if (!d) continue;
    seen.insert(std::string(d->op));
    if (!d->attributes) undescribed.push_back(std::string(d->op) + " (row " + row + ")");
  }
}

TEST(OpAttributes, EveryOpOfEveryGradientTableRowDescribesItself) {
  std::set<std::string> seen;
  std::vector<std::string> undescribed;
  for (const GradCase& c : grad_table())
    for (DType dtype : {DType::float64, DType::float32}) {  // a cast to the other dtype records only in float32
    Rng rng = row_rng(c, 0);
    const std::vector<Tensor> inputs = converted(draw_inputs(c, rng), dtype);
    Tape tape;
    std::vector<Var> vars;
    for (const Tensor& x : inputs) vars.push_back(tape.variable(x));
    try {
      const Var out = c.fn.on_vars(vars);
      const Var total = sum(out);
      (void)tape.grad(std::span<const Var>(&total, 1), vars, {}, {.create_graph = true});
    } catch (const Error& e) {
      ADD_FAILURE() << "row " << c.name << " threw on its own inputs: " << e.what();
    }
    collect_undescribed(tape, c.name, seen, undescribed);
    }
  EXPECT_TRUE(undescribed.empty()) << "ops that do not describe their parameters (give each an `OpAttributes "
                                      "attributes() const`): "
                                   << ::testing::PrintToString(undescribed);
  // The walk reached the ops with parameters, forward and backward.
  for (const char* op : {"slice", "slice_backward", "index", "take", "take_backward", "gather", "gather_backward",
                         "sum", "max", "logsumexp", "softmax", "log_softmax", "concat", "stack", "permute", "reshape",
                         "broadcast_to", "sum_to", "matmul", "clip", "cast", "cross_entropy", "mse",
                         "linear_recurrence", "fused_recurrence", "rnn_pointwise", "lstm_pointwise"})
    EXPECT_TRUE(seen.contains(op)) << op;
}

// The check above can fail: an op with data members and no attributes() does not describe
// itself (a user's op may be like that; ops/ may not).
struct Undescribed {
  static constexpr std::string_view name = "undescribed";
  double factor;
  Tensor forward(const Tensor& x) const { return x * factor; }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {a.grad * factor};
  }
};
struct Memberless {
  static constexpr std::string_view name = "memberless";
  Tensor forward(const Tensor& x) const { return x; }
  template <class V>
  Grads<V> backward(const BackwardArgs<V>& a) const {
    return {a.grad};
  }
};

TEST(OpAttributes, AnOpWithMembersAndNoDescriptionIsSeen) {
  Tape tape;
  const Var x = tape.variable(ones({2}));
  const Var y = record(Undescribed{2.0}, x);
  const Var z = record(Memberless{}, y);
  std::set<std::string> seen;
  std::vector<std::string> undescribed;
  collect_undescribed(tape, "test", seen, undescribed);
  EXPECT_EQ(undescribed, std::vector<std::string>{"undescribed (row test)"});
  ASSERT_TRUE(tape.describe(z)->attributes);
  EXPECT_TRUE(tape.describe(z)->attributes->items().empty());
}

// The description of `v`'s op, which must have one.
OpAttributes attributes_of(const Var& v) {
  const std::optional<OpDescription> d = v.tape().describe(v);
  if (!d || !d->attributes) throw std::runtime_error("no description");
  return *d->attributes;
}
using Ints = std::vector<std::int64_t>;

TEST(OpAttributes, OpsSayTheParametersTheyWereCalledWith) {
  Tape tape;
  Generator gen(3);
  const Var x = tape.variable(uniform({3, 4, 5}, -1.0, 1.0, gen, DType::float64));
  const OpAttributes s = attributes_of(slice(x, -1, 1, 100, 2));
  EXPECT_EQ(s.get<std::int64_t>("slice", "axis"), -1);
  EXPECT_EQ(s.get<std::int64_t>("slice", "start"), 1);
  EXPECT_EQ(s.get<std::int64_t>("slice", "stop"), 100);
  EXPECT_EQ(s.get<std::int64_t>("slice", "step"), 2);
  const OpAttributes r = attributes_of(sum(x, {0, -1}, true));
  EXPECT_EQ(r.get<Ints>("sum", "axes"), (Ints{0, -1}));
  EXPECT_TRUE(r.get<bool>("sum", "keepdims"));
  const Var m = matmul_t(index(x, 0, 1), index(x, 0, 2), false, true);
  EXPECT_FALSE(attributes_of(m).get<bool>("matmul", "transpose_a"));
  EXPECT_TRUE(attributes_of(m).get<bool>("matmul", "transpose_b"));
  EXPECT_EQ(attributes_of(index(x, 2, -2)).get<std::int64_t>("index", "index"), -2);
  const OpAttributes c = attributes_of(clip(x, -0.5, 0.25));
  EXPECT_EQ(c.get<double>("clip", "lo"), -0.5);
  EXPECT_EQ(c.get<double>("clip", "hi"), 0.25);
  EXPECT_EQ(attributes_of(permute(x, {2, 0, 1})).get<Ints>("permute", "dims"), (Ints{2, 0, 1}));
  EXPECT_EQ(attributes_of(reshape(x, {-1, 5})).get<Ints>("reshape", "shape"), (Ints{-1, 5}));
  EXPECT_EQ(attributes_of(log_softmax(x, 1)).get<std::int64_t>("log_softmax", "axis"), 1);
  EXPECT_EQ(attributes_of(cast(x, DType::float32)).get<std::string>("cast", "dtype"), "float32");
  EXPECT_EQ(to_string(attributes_of(slice(x, 0, 0, 2))), "axis = 0, start = 0, stop = 2, step = 1");
}

TEST(OpAttributes, TheFusedLayerSaysItsCellAndForm) {
  Tape tape;
  const std::int64_t t = 2, b = 1, i = 2, h = 3;
  Generator gen(5);
  auto param = [&](Shape s) { return tape.variable(uniform(s, -0.5, 0.5, gen, DType::float64)); };
  const nn::CellWeights w{.w_ih = param({3 * h, i}), .w_hh = param({3 * h, h}), .b_ih = param({3 * h})};
  const Var y = nn::fused_recurrence({.kind = nn::CellKind::gru, .linear_before_reset = false, .reverse = true},
                                     param({t, b, i}), w, param({b, h}));
  const OpAttributes a = attributes_of(y);
  EXPECT_EQ(a.get<std::string>("fused_recurrence", "kind"), "gru");
  EXPECT_FALSE(a.get<bool>("fused_recurrence", "linear_before_reset"));
  EXPECT_TRUE(a.get<bool>("fused_recurrence", "reverse"));
  EXPECT_TRUE(a.get<bool>("fused_recurrence", "has_b_ih"));
  EXPECT_FALSE(a.get<bool>("fused_recurrence", "has_b_hh"));
  EXPECT_FALSE(a.get<bool>("fused_recurrence", "has_c0"));
}

// Inside a scan a draw is an op on the tape (a checkpoint may replay it); outside, a constant.
TEST(OpAttributes, RandomDrawsSayTheirDistribution) {
  Tape tape;
  RandomStream stream(7);
  (void)scan([&](std::span<const Var>) { return StepResult{stream.uniform({2, 3}, -1.0, 2.0, DType::float64)}; },
             {.n_steps = 2});
  std::vector<OpAttributes> draws;
  for (std::uint32_t id = 0; id < tape.size(); ++id)
    if (const auto d = tape.describe(TapeAccess::handle(tape, id)); d && d->op == "RandomStream::uniform")
      draws.push_back(d->attributes.value());
  ASSERT_EQ(draws.size(), 2u);
  EXPECT_EQ(draws[1].get<Ints>("uniform", "shape"), (Ints{2, 3}));
  EXPECT_EQ(draws[1].get<double>("uniform", "low"), -1.0);
  EXPECT_EQ(draws[1].get<double>("uniform", "high"), 2.0);
  EXPECT_EQ(draws[1].get<std::string>("uniform", "dtype"), "float64");
}

TEST(OpAttributes, AskingForAMissingOrMistypedAttributeNamesIt) {
  Tape tape;
  const Var x = tape.variable(ones({2, 2}));
  const OpAttributes a = attributes_of(softmax(x, 0));
  expect_error<ValueError>([&] { (void)a.get<std::int64_t>("softmax", "dim"); }, {"softmax", "'dim'", "axis = 0"});
  expect_error<ValueError>([&] { (void)a.get<double>("softmax", "axis"); }, {"softmax", "'axis'", "another type"});
  expect_error<TapeError>([&] {
    Tape other;
    (void)other.describe(x);
  }, {"Tape::describe", "another tape"});
  EXPECT_FALSE(tape.describe(x).has_value());  // a leaf: no op
}

}  // namespace
}  // namespace recur::testing
