#pragma once
// Whether captured loops run as one node (ops/scan/captured_loop_detail.hpp) for one scope,
// then the process's choice again, also when a test's assertion leaves the scope early.
#include <recur/ops/scan/captured_loop_detail.hpp>

namespace recur::testing {

struct LoopNodeScope {
  explicit LoopNodeScope(bool on) : before(scan_engine::detail::loop_node_switch()) {
    scan_engine::detail::set_loop_node_switch(on);
  }
  ~LoopNodeScope() { scan_engine::detail::set_loop_node_switch(before); }
  LoopNodeScope(const LoopNodeScope&) = delete;
  LoopNodeScope& operator=(const LoopNodeScope&) = delete;
  bool before;
};

}  // namespace recur::testing
