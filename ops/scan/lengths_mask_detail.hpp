#pragma once
// Per-batch-element lengths inside the scan engine (the faces' `lengths` option): which
// elements an iteration runs, and the masked selects, built from `where`, that keep a
// finished element's carry, zero its outputs and (under truncation) stop its gradient.
// Every face gets them from the engine; none masks anything itself.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <recur/ops/scan/types.hpp>

namespace recur::scan_engine {

class LengthMask {
 public:
  // Reads and checks `given` (a 1-D list of whole numbers 0 <= lengths[b] <= steps);
  // `reverse`: the loop visits positions steps - 1 down to 0 (lengths still count from 0).
  // truncate_gradient = k >= 0: each element backpropagates through its own last k steps.
  LengthMask(std::string_view face, const SequenceLengths& given, std::int64_t steps, bool reverse,
             std::int64_t truncate_gradient);

  std::int64_t batch() const { return static_cast<std::int64_t>(lengths_.size()); }
  const std::vector<std::int64_t>& lengths() const { return lengths_; }  // as checked
  // ShapeError unless `shape` has the batch size on `axis` ("xs[0] of shape [4, 2] needs ...").
  void check_batch_axis(const std::string& what, const Shape& shape, std::int64_t axis) const;

  // Prepares the masks of iteration t (call before keep, zero and gate).
  void begin_iteration(std::int64_t t);
  // fresh for the elements iteration t runs, old for the others.
  Var keep(const Var& fresh, const Var& old) const;
  // v for the elements iteration t runs, zero for the others.
  Var zero(const Var& v) const;
  // v, whose gradient reaches the step only for elements within their last k steps.
  Var gate(const Var& v) const;
  // The first iteration any element needs gradients from, when the taps of fed-back outputs
  // reach `window` values back: truncation may cut every iteration before it.
  std::int64_t first_needed_iteration(std::int64_t window) const;

 private:
  struct Selection {
    std::vector<std::int64_t> pick;  // 1 or 0 per element
    bool all = false, none = false;
  };
  static Selection select(std::int64_t batch, const std::function<bool(std::int64_t)>& chosen);
  static Var apply(const Selection& s, const Var& a, const Var& b);
  std::int64_t first_iteration(std::int64_t b) const;  // element b's first step in loop order

  std::string_view face_;
  std::vector<std::int64_t> lengths_;
  std::int64_t steps_;
  bool reverse_;
  std::int64_t truncate_;
  Selection running_, gradient_;
};

}  // namespace recur::scan_engine
