#pragma once
// Whether captured loops run as one node (ops/scan/captured_loop_detail.hpp), and whether
// such a node runs planned (ops/scan/planned_loop_detail.hpp), for one scope; then the
// process's choice again, also when a test's assertion leaves the scope early.
#include <recur/ops/scan/captured_loop_detail.hpp>
#include <recur/ops/scan/planned_loop_detail.hpp>

namespace recur::testing {

template <bool (*Get)(), void (*Set)(bool)>
struct SwitchScope {
  explicit SwitchScope(bool on) : before(Get()) { Set(on); }
  ~SwitchScope() { Set(before); }
  SwitchScope(const SwitchScope&) = delete;
  SwitchScope& operator=(const SwitchScope&) = delete;
  bool before;
};

using LoopNodeScope = SwitchScope<&scan_engine::detail::loop_node_switch, &scan_engine::detail::set_loop_node_switch>;
using PlannedLoopScope =
    SwitchScope<&scan_engine::detail::planned_loop_switch, &scan_engine::detail::set_planned_loop_switch>;

}  // namespace recur::testing
