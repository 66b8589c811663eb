#pragma once
// Option checks shared by optimizers, schedules and clipping.
#include <string_view>

#include <recur/core/error.hpp>

namespace recur::optim {

// ValueError "recur::<op>: argument '<arg>' must be <requirement>, got <value>" unless ok
// (write `ok` so that NaN fails it: `x >= 0`, not `!(x < 0)`).
inline void check_argument(std::string_view op, std::string_view arg, bool ok, std::string_view requirement,
                           double value) {
  if (!ok) fail<ValueError>(op, "argument '", arg, "' must be ", requirement, ", got ", value);
}

}  // namespace recur::optim
