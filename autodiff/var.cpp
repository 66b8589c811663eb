// Var's members that reach its tape, and the check that an op's inputs share one tape.
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/tape_registry_detail.hpp>

namespace recur {

Var::Var(const Shared& shared) : Var(Tape::current().read(shared)) {}
Var::Var(const Tensor& constant) : Var(Tape::current().constant(constant)) {}

Tape& Var::tape() const {
  if (serial_ == 0) fail<TapeError>("Var", "use of an undefined Var (default-constructed)");
  Tape* tape = detail::live_tape(slot_, tape_serial());
  if (!tape) fail<TapeError>("Var", "use of a Var whose tape has been destroyed");
  if (epoch() != tape->epoch_) tape->check_not_dropped(*this);
  return *tape;
}

const Tensor& Var::value() const {
  const Tape& t = tape();
  const Tensor& v = TapeAccess::node_value(t, id_);
  if (v.defined()) return v;
  if (TapeAccess::value_dropped(t, id_))
    fail<TapeError>("Var::value", "node ", id_, " (", v.dtype(), " of shape ", to_string(v.shape()),
                    ") is inside a captured loop that dropped its value, as no backward rule reads it; "
                    "read the loop's outputs instead, or run the loop with Capture::off");
  fail<TapeError>("Var::value", "node ", id_, " is inside a checkpointed segment whose values were released; "
                  "read the loop's outputs instead (backward recomputes the segment when it needs it)");
}
bool Var::requires_grad() const { return TapeAccess::requires_grad(tape(), id_); }
Tensor Var::grad() const { return TapeAccess::leaf_grad(tape(), id_); }

namespace detail {
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

}  // namespace recur
