#pragma once
// What a running scan tells the tape (a RecordingScope): where its nodes start, which
// Shared values it has updated so far (reads see the update, not the stored value) and,
// under `strict`, which outer nodes and Shared values its step function may use.
#include <cstdint>
#include <utility>
#include <vector>

#include <recur/autodiff/recording_scope.hpp>
#include <recur/autodiff/shared.hpp>
#include <recur/autodiff/var.hpp>

namespace recur::scan_engine {

class ScanScope final : public RecordingScope {
 public:
  std::uint32_t begin = 0;
  bool strict = false;
  std::vector<std::uint32_t> allowed;                            // outer node ids (strict)
  std::vector<std::pair<const void*, std::uint32_t>> overrides;  // Shared identity -> node
  // Updates made by code running inside the step instead of returned by it (a random
  // stream's state, ops/random_stream.hpp); the engine merges them into the step's updates.
  std::vector<std::pair<Shared, Var>> implicit_updates;

  // Later reads of `shared` inside the scan see node `node`.
  void set_override(const Shared& shared, std::uint32_t node);

  bool checks_inputs() const override { return strict; }
  std::optional<std::uint32_t> redirect_read(const Shared& shared) const override;
  // Strict: an input that is an outer node not passed to the scan is refused.
  void check_inputs(const Tape& tape, std::string_view op, std::span<const std::uint32_t> inputs) const override;
  // Strict: a Shared not passed to the scan is refused (an earlier outer read of it too).
  void check_read(const Tape& tape, const Shared& shared, const std::uint32_t* earlier) const override;
  // An implicit update: later reads see `value`, and the scan returns it in its updates.
  void take_update(const Shared& shared, const Var& value) override;
};

}  // namespace recur::scan_engine
