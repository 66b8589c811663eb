#pragma once
// Named tensors in NumPy's .npz format, as numpy.savez writes it and numpy.load reads it:
// a ZIP archive of members "<name>.npy", each a .npy file (see core/npy.hpp for the
// dtypes); save_npz writes them uncompressed ("stored"). numpy.load(path)["<name>"]
// reads what save_npz wrote.
//
// What save_npz writes, so that any ZIP reader can check it: one local header per member
// (no extra field, CRC-32 and sizes filled in, date fixed at 1980-01-01 00:00 so the same
// arrays give the same bytes, general-purpose flag 0x0800 when the name is not ASCII),
// the .npy bytes (format 1.0, as save_npy writes them), then the central directory in the
// same order and the end record. It writes no ZIP64: an archive must stay below 4 GiB and
// 65535 members (ValueError before anything is written); load_npz reads ZIP64.
//
// Names are UTF-8 byte strings and may contain '/' (numpy's own keys may, and so do
// checkpoints: "param/lstm.weight_ih_l0"), but must be safe as relative paths for tools
// that unpack the archive: not empty, no NUL byte, no leading or trailing '/', no empty,
// "." or ".." component, each name once.
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include <recur/core/tensor.hpp>

namespace recur {

// The arrays in file order (load_npz, save_npz), or by name (load_npz_map, save_npz_map:
// numpy.load(path)[name] in C++; find() takes a std::string_view too).
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using TensorMap = std::map<std::string, Tensor, std::less<>>;

// Replaces `path` atomically: writes a temporary in the same directory, fsyncs it, renames
// it over `path` and fsyncs the directory; on any failure the temporary is removed, the
// old file is untouched and IOError is thrown. Bad names or undefined tensors: ValueError,
// before any file is touched.
void save_npz(const std::filesystem::path& path, const NamedTensors& arrays);

// The arrays in the archive's order. libzip reads the archive: stored or deflated members
// (numpy.savez and numpy.savez_compressed), ZIP64, data descriptors, archive comments; it
// checks the end record, the central directory against every local header, and the CRC-32
// of every member. recur checks the rest before any .npy is parsed: names (as for
// save_npz, each once), no encryption, no other compression method, sizes that fit the
// file. A truncated or corrupted file: IOError naming the path (and the member when known)
// and what is wrong. A member whose dtype recur lacks: DTypeError (as load_npy).
NamedTensors load_npz(const std::filesystem::path& path);

// The same archives by name: load_npz's checks and errors (names are unique in a valid
// archive, so nothing is lost but the order); save_npz_map writes the members in name
// order (byte-wise), with save_npz's checks and atomic replacement.
TensorMap load_npz_map(const std::filesystem::path& path);
void save_npz_map(const std::filesystem::path& path, const TensorMap& arrays);

}  // namespace recur
