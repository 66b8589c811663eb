// The tape's neutral hooks: a RecordingScope that redirects Shared reads and checks op
// inputs (scan's scope is one; this file's are not), and the leaf-gradient index.
#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include <recur/autodiff/record.hpp>
#include <recur/autodiff/recording_scope.hpp>
#include <recur/autodiff/tape_access.hpp>
#include <recur/recur.hpp>

namespace recur {
namespace {

// Reads of `from` see node `to`; with `refused` set, ops may not use that node.
class TestScope final : public RecordingScope {
 public:
  TestScope(bool checks, std::string tag) : checks_(checks), tag_(std::move(tag)) {}
  const void* from = nullptr;
  std::uint32_t to = 0;
  std::vector<std::uint32_t> refused;
  int checked = 0;
  std::vector<std::pair<Shared, Var>> updates;

  bool checks_inputs() const override { return checks_; }
  std::optional<std::uint32_t> redirect_read(const Shared& shared) const override {
    if (shared.identity() == from) return to;
    return std::nullopt;
  }
  void check_inputs(const Tape&, std::string_view op, std::span<const std::uint32_t> inputs) const override {
    ++const_cast<TestScope*>(this)->checked;
    for (std::uint32_t id : inputs)
      for (std::uint32_t r : refused)
        if (id == r) throw std::runtime_error(tag_ + " refuses node " + std::to_string(id) + " in " + std::string(op));
  }
  void check_read(const Tape&, const Shared& shared, const std::uint32_t*) const override {
    if (shared.name() == "forbidden") throw std::runtime_error(tag_ + " refuses a read");
  }
  void take_update(const Shared& shared, const Var& value) override { updates.emplace_back(shared, value); }

 private:
  bool checks_;
  std::string tag_;
};

// Pushes a scope for the lifetime of the guard.
struct Pushed {
  Pushed(Tape& tape, RecordingScope& scope) : tape(tape) { TapeAccess::push_scope(tape, &scope); }
  ~Pushed() { TapeAccess::pop_scope(tape); }
  Tape& tape;
};

TEST(RecordingScope, RedirectsSharedReadsWhileActive) {
  Shared w(tensor({1.0, 2.0}, DType::float64), "w");
  Tape tape;
  Var replacement = tape.constant(tensor({7.0, 8.0}, DType::float64));
  TestScope scope(false, "outer");
  scope.from = w.identity();
  scope.to = replacement.id();
  {
    Pushed p(tape, scope);
    EXPECT_TRUE(same_node(Var(w), replacement));
    EXPECT_EQ(TapeAccess::innermost_scope(tape), &scope);
  }
  EXPECT_EQ(TapeAccess::innermost_scope(tape), nullptr);
  Var after = w;
  EXPECT_FALSE(same_node(after, replacement));
  EXPECT_TRUE(allclose(after.value(), tensor({1.0, 2.0}, DType::float64)));
}

TEST(RecordingScope, OnlyTheInnermostCheckingScopeChecksInputs) {
  Tape tape;
  Var a = tape.variable(tensor({1.0}, DType::float64));
  Var b = tape.variable(tensor({2.0}, DType::float64));
  TestScope outer(true, "outer"), middle(false, "middle"), inner(true, "inner");
  outer.refused = {a.id()};
  inner.refused = {b.id()};
  {
    Pushed po(tape, outer);
    EXPECT_THROW((void)(a * 2.0), std::runtime_error);
    {
      Pushed pm(tape, middle);
      try {
        (void)(a * 2.0);
        FAIL() << "the outer scope should refuse a";
      } catch (const std::runtime_error& e) {
        EXPECT_EQ(std::string(e.what()), "outer refuses node 0 in mul");
      }
      Pushed pi(tape, inner);
      EXPECT_NO_THROW((void)(a * 2.0));  // the inner scope decides, and allows a
      EXPECT_THROW((void)(b * 2.0), std::runtime_error);
      EXPECT_EQ(middle.checked, 0);
    }
  }
  const int outer_checks = outer.checked;
  Var c = a * b;  // no scope: nothing is asked
  EXPECT_EQ(outer.checked, outer_checks);
  EXPECT_TRUE(allclose(c.value(), tensor({2.0}, DType::float64)));
}

TEST(RecordingScope, ChecksSharedReads) {
  Shared forbidden(tensor({1.0}), "forbidden");
  Tape tape;
  TestScope scope(true, "s");
  Pushed p(tape, scope);
  EXPECT_THROW(Var v(forbidden), std::runtime_error);
  const auto size = tape.size();
  EXPECT_THROW(Var v(forbidden), std::runtime_error);
  EXPECT_EQ(tape.size(), size);  // a refused read records nothing
}

TEST(LeafGradients, EachVariableKeepsItsOwnAndAccumulates) {
  Tape tape;
  std::vector<Var> xs;
  for (int i = 0; i < 600; ++i) xs.push_back(tape.variable(tensor({static_cast<double>(i)}, DType::float64)));
  Var total = tape.constant(tensor({0.0}, DType::float64));
  for (int i = 0; i < 600; i += 2) total = total + xs[i] * xs[i];  // odd ones unused
  tape.backward(sum(total), {.retain_graph = true});
  tape.backward(sum(total));
  for (int i = 0; i < 600; ++i)
    EXPECT_DOUBLE_EQ(xs[i].grad().item(), i % 2 == 0 ? 2.0 * 2.0 * i : 0.0) << i;
}

TEST(LeafGradients, AVariableDroppedByAFailedOpLeavesNoGradientBehind) {
  Tape tape;
  Var a = tape.variable(tensor({3.0}, DType::float64));
  EXPECT_THROW(transactional(tape,
                            [&]() -> Var {
                              tape.variable(tensor({5.0}, DType::float64));
                              throw std::runtime_error("a composite op fails halfway");
                            }),
               std::runtime_error);
  Var b = tape.variable(tensor({4.0}, DType::float64));
  tape.backward(sum(a * b));
  EXPECT_DOUBLE_EQ(a.grad().item(), 4.0);
  EXPECT_DOUBLE_EQ(b.grad().item(), 3.0);
}

}  // namespace
}  // namespace recur
