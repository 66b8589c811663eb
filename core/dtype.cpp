#include <recur/core/dtype.hpp>

namespace recur::detail {

void fail_integer_conversion(std::string_view op, double value) {
  fail<ValueError>(op, "the value ", value, " cannot be held in int64 (its whole part must lie in [-2^63, 2^63))");
}

}  // namespace recur::detail
