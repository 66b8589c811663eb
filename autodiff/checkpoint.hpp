#pragma once
// Training checkpoints: parameters, optimizer state, random generators and the step count
// in one .npz file (core/npz.hpp), written atomically, so that training can stop and go on
// bit-exactly.
//
// The format (version 1), readable by any .npz reader:
//   "meta/format"   int64 scalar, 1 (the version of this layout)
//   "meta/step"     int64 scalar, TrainingState::step
//   "param/<name>"  one per TrainingState::parameters entry, its value (float32/float64/int64)
//   "optim/<name>"  one per TrainingState::optimizer_state entry, its value
//   "extra/<name>"  one per TrainingState::extra entry, its value
//   "rng/<name>"    one per TrainingState::generators entry: Generator::state(), int64 of
//                   shape [4] (a tag, the Philox key, the 128-bit position; portable between
//                   builds). Checkpoints written before the Generator became Philox4x32-10
//                   hold longer mt19937_64 states: loading one throws ShapeError naming the
//                   member (that stream cannot be continued)
// Members appear in that order, each group in the order of its vector. From Python:
//   ckpt = numpy.load("ckpt.npz"); ckpt["param/lstm.weight_ih_l0"]; int(ckpt["meta/step"])
// Names may contain '/' and '.' (module prefixes) but must be valid .npz names
// (see core/npz.hpp) and unique within their group.
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include <recur/autodiff/module.hpp>
#include <recur/core/random.hpp>

namespace recur {

inline constexpr std::int64_t kCheckpointFormat = 1;

// What a checkpoint saves and restores. The Shared handles and generators belong to the
// caller; load_checkpoint writes into them.
struct TrainingState {
  NamedShared parameters{};      // e.g. model.named_parameters()
  NamedShared optimizer_state{}; // moments, step counters, ...
  NamedShared extra{};           // whatever else the run carries on (e.g. an RNN state across chunks)
  std::vector<std::pair<std::string, Generator*>> generators{};
  std::int64_t step = 0;
};

// Writes `state` to `path` atomically (the previous file stays intact if anything fails).
// An undefined Shared, a null generator or a repeated name: ValueError; file-system
// failures: IOError.
// The variables are read together under their locks (SharedLock): saving while an
// optimizer steps on another thread is safe and saves the state before or after the step.
void save_checkpoint(const std::filesystem::path& path, const TrainingState& state);

// Reads `path` into `state`, all or nothing: everything is checked before anything changes.
//   the file is missing, truncated or corrupted -> IOError (from load_npz)
//   another format version, missing or extra members, an invalid `state` -> ValueError
//   a member whose dtype or shape differs from its variable's -> DTypeError / ShapeError
//   naming the member and both dtypes / shapes
// Then every Shared is assigned (its version bumps; all under one SharedLock), every
// generator set and step restored.
void load_checkpoint(const std::filesystem::path& path, TrainingState& state);

}  // namespace recur
