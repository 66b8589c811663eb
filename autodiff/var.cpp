// Var's members that reach its tape, and the check that an op's inputs share one tape.
#include <recur/autodiff/record.hpp>
#include <recur/autodiff/tape_registry_detail.hpp>

namespace recur {

Var::Var(const Shared& shared) : Var(Tape::current().read(shared)) {}
Var::Var(const Tensor& constant) : Var(Tape::current().constant(constant)) {}

Tape& Var::tape() const {
  if (serial_ == 0) fail<TapeError>("Var", "use of an undefined Var (default-constructed)");
  Tape* tape = detail::live_tape(slot_, serial_);
  if (!tape) fail<TapeError>("Var", "use of a Var whose tape has been destroyed");
  return *tape;
}

const Tensor& Var::value() const {
  const Tensor& v = TapeAccess::node_value(tape(), id_);
  if (!v.defined())
    fail<TapeError>("Var::value", "node ", id_, " is inside a checkpointed segment whose values were released; "
                    "read the loop's outputs instead (backward recomputes the segment when it needs it)");
  return v;
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
