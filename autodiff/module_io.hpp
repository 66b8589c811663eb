#pragma once
// Models in and out by parameter name, as LibTorch's torch::save(module, path) and
// torch::load(module, path): an .npz file (core/npz.hpp) with one member per entry of
// Module::named_parameters(), under the same name, holding the parameter's value.
//   Module:  lstm.weight_ih_l0 [128, 8] float32, lstm.bias_ih_l0 [128], head.weight ...
//   Python:  numpy.load("model.npz")["lstm.weight_ih_l0"]           # the same array
//            model.load_state_dict({k: torch.from_numpy(v) for k, v in numpy.load("model.npz").items()})
//            numpy.savez("model.npz", **{k: v.numpy() for k, v in model.state_dict().items()})
// (the layers use PyTorch's parameter names, so a PyTorch model of the same structure and
// recur exchange files key for key).
// A training checkpoint (checkpoint.hpp) saves the same values under "param/<name>" next
// to the optimizer and generators; these files hold the parameters alone.
//
//   save(model, "model.npz");
//   load(model, "model.npz");                                 // every name, dtype and shape must match
//   load(model, "model.npz", {.convert_dtypes = true});       // e.g. a float64 file into a float32 model
//   LoadReport r = load(model, "part.npz", {.strict = false});  // r.missing, r.unexpected
// The same in Hugging Face's safetensors format (core/safetensors.hpp), with the same
// options and errors:
//   save_safetensors(model, "model.safetensors", {{"format", "pt"}});   // metadata optional
//   load_safetensors(model, "model.safetensors", {.convert_dtypes = true});
//   Python:  model.load_state_dict(safetensors.torch.load_file("model.safetensors"))
#include <filesystem>
#include <string>
#include <vector>

#include <recur/autodiff/module.hpp>
#include <recur/core/safetensors.hpp>

namespace recur {

struct LoadOptions {
  // false: members the parameters lack are skipped and parameters the file lacks keep their
  // values (PyTorch's load_state_dict(strict=False)); load returns both lists. Members
  // that do match are still checked (dtype, shape) and loaded all or nothing.
  bool strict = true;
  // true: a member of another dtype is converted to its parameter's (Tensor::to): float32
  // and float64 either way (to float32 rounds to nearest), int64 into either. A floating
  // member into an int64 parameter stays a DTypeError (it would truncate).
  bool convert_dtypes = false;
};

// What a non-strict load skipped, each in name order (both empty after a strict load).
struct LoadReport {
  std::vector<std::string> missing;     // parameters the file lacks (they kept their values)
  std::vector<std::string> unexpected;  // members of the file no parameter has (not read)
};

// Writes every parameter of `module` (all read together, as save_checkpoint does, so a
// step on another thread lands wholly before or after) to `path` atomically: the old file
// stays intact if anything fails. Names that cannot be .npz names: ValueError (see
// core/npz.hpp); file-system failures: IOError.
void save(const Module& module, const std::filesystem::path& path);

// Reads `path` into the parameters of `module` (its Shared handles: every copy of the
// module sees the new values), all or nothing: everything is checked before anything is
// assigned, and on any error every parameter keeps its value and version.
//   the file is missing, truncated or corrupted, not an .npz      -> IOError (load_npz's)
//   strict, and parameters the file lacks or members none has    -> ValueError listing both
//   a member of another dtype (without convert_dtypes)            -> DTypeError naming the
//                                                                    member and both dtypes
//   a member of another shape                                     -> ShapeError naming the
//                                                                    member and both shapes
// Then every parameter read is assigned (its version bumps), all under one SharedLock.
LoadReport load(const Module& module, const std::filesystem::path& path, const LoadOptions& options = {});

// The same for any named shared variables (what Module::named_parameters() returns; names
// unique, no null handle: ValueError otherwise).
void save(const NamedShared& variables, const std::filesystem::path& path);
LoadReport load(const NamedShared& variables, const std::filesystem::path& path, const LoadOptions& options = {});

// save and load in a safetensors file: one tensor per parameter under its name (F32, F64
// or I64), in the module's order, and `metadata` as the header's "__metadata__". The same
// checks, errors and all-or-nothing assignment, named "recur::save_safetensors" and
// "recur::load_safetensors"; the file's own errors are load_safetensors's (IOError for a
// malformed file, checked before any tensor is read). Only the tensors the parameters name
// are read: a non-strict load skips the others unread, whatever their dtype. With
// LoadOptions::convert_dtypes, F16 and BF16 tensors load too (exactly into float32, then
// Tensor::to the parameter's floating dtype); without it they are a DTypeError, as any
// member of another dtype.
void save_safetensors(const Module& module, const std::filesystem::path& path, const SafetensorsMetadata& metadata = {});
LoadReport load_safetensors(const Module& module, const std::filesystem::path& path, const LoadOptions& options = {});
void save_safetensors(const NamedShared& variables, const std::filesystem::path& path,
                      const SafetensorsMetadata& metadata = {});
LoadReport load_safetensors(const NamedShared& variables, const std::filesystem::path& path,
                            const LoadOptions& options = {});

}  // namespace recur
