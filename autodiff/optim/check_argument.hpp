#pragma once
// Option checks shared by optimizers, schedules and clipping.
#include <cmath>
#include <string_view>

#include <recur/core/error.hpp>

namespace recur::optim {

// ValueError "recur::<op>: argument '<arg>' must be <requirement>, got <value>" unless ok
// (write `ok` so that NaN fails it: `x >= 0`, not `!(x < 0)`).
inline void check_argument(std::string_view op, std::string_view arg, bool ok, std::string_view requirement,
                           double value) {
  if (!ok) fail<ValueError>(op, "argument '", arg, "' must be ", requirement, ", got ", value);
}

// The same for a hyperparameter of a rule or a schedule, which must also be finite: an
// infinite learning rate or decay turns every parameter it touches into inf or NaN at the
// first step. ValueError "... must be a finite number <requirement>, got inf".
inline void check_hyperparameter(std::string_view op, std::string_view arg, bool ok, std::string_view requirement,
                                 double value) {
  const bool finite = std::isfinite(value);
  if (!finite || !ok)
    fail<ValueError>(op, "argument '", arg, "' must be a finite number", requirement.empty() ? "" : " ", requirement,
                     ", got ", value);
}

}  // namespace recur::optim
