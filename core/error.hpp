#pragma once
// The exceptions recur throws. Every message starts with "recur::<op>: " and names the
// argument and the shapes involved, so that a failure deep in a training loop can be read
// without a debugger.
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>

namespace recur {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ShapeError : Error { using Error::Error; };     // shapes that do not fit together
struct DTypeError : Error { using Error::Error; };     // wrong or mismatched element type
struct AxisError : Error { using Error::Error; };      // axis or dimension out of range
struct IndexError : Error { using Error::Error; };     // index out of range
struct ValueError : Error { using Error::Error; };     // an argument with a bad value
struct TapeError : Error { using Error::Error; };      // dead tape, two tapes mixed, no tape
struct GradientError : Error { using Error::Error; };  // a gradient that cannot be taken
struct VersionError : Error { using Error::Error; };   // a shared value changed under a tape
struct IOError : Error { using Error::Error; };        // files: missing, truncated, wrong type
struct MemoryError : Error { using Error::Error; };    // the system could not provide a buffer
struct LimitError : Error { using Error::Error; };     // a bound the caller set was reached (iterations)
struct CancelledError : Error { using Error::Error; }; // the caller asked the running work to stop

namespace detail {
template <class... Parts>
std::string concat(const Parts&... parts) {
  std::ostringstream out;
  (out << ... << parts);
  return out.str();
}
}  // namespace detail

// fail<ShapeError>("matmul", "argument 'b' has shape ", b, ...) throws
// ShapeError("recur::matmul: argument 'b' has shape ...").
template <class E, class... Parts>
[[noreturn]] void fail(std::string_view op, const Parts&... parts) {
  throw E(detail::concat("recur::", op, ": ", parts...));
}

}  // namespace recur
