#pragma once
// RecordingScope: a stretch of recording that the tape consults, so that a construct built
// on the tape (a loop's step function, in ops/) can give reads of a
// Shared another meaning and refuse inputs, without the tape knowing the construct.
// Scopes nest; they are pushed and popped through TapeAccess. While none is active the
// tape pays one branch per recorded op.
#include <cstdint>
#include <optional>
#include <span>
#include <string_view>

namespace recur {

class Shared;
class Tape;
class Var;

class RecordingScope {
 public:
  // Whether check_inputs and check_read run. The tape asks when the scope is pushed and
  // popped, so the answer must not change in between.
  virtual bool checks_inputs() const = 0;

  // A read of `shared` inside the scope: the node it sees instead of the Shared's value
  // (an update made inside the scope), or nullopt. Scopes are asked innermost first.
  virtual std::optional<std::uint32_t> redirect_read(const Shared& shared) const = 0;

  // Only the innermost scope that checks inputs is asked (it sees an enclosing scope's
  // nodes as outer ones). Throws to refuse op `op` the tape nodes `inputs`.
  virtual void check_inputs(const Tape& tape, std::string_view op, std::span<const std::uint32_t> inputs) const = 0;
  // Throws to refuse a read of `shared`: one that would share the earlier read's node
  // `earlier` (not null), or a new read (null).
  virtual void check_read(const Tape& tape, const Shared& shared, const std::uint32_t* earlier) const = 0;

  // Code running inside the scope changed `shared` to `value` (a random stream's draw):
  // the scope keeps the change, later reads in it see `value`, and the Shared itself is
  // left as it was.
  virtual void take_update(const Shared& shared, const Var& value) = 0;

 protected:
  ~RecordingScope() = default;
};

}  // namespace recur
