#pragma once
// The .npy encoding shared by .npy files (core/npy) and the members of .npz archives
// (core/npz): one writer of the header numpy.save writes, one validating reader of a
// .npy byte range inside a stream. Internal: users call save_npy / load_npy / save_npz /
// load_npz.
#include <cstdint>
#include <istream>
#include <optional>
#include <string>
#include <string_view>

#include <recur/core/tensor.hpp>

namespace recur::detail {

// The preamble and header numpy.save writes for t (format 1.0; 2.0 when the header needs
// more than 65535 bytes), padded so the data starts at a multiple of 64 bytes. The data
// that follows is t.raw_data(), t.nbytes() bytes.
std::string npy_header(const Tensor& t);

// How errors name the bytes being read: "recur::<op>: <where>: <what is wrong>".
struct NpyOrigin {
  std::string_view op;  // "load_npy", "load_npz"
  std::string where;    // "'a.npy'", "'ckpt.npz', member 'w.npy'"
};

// Reads the .npy encoding that occupies the `size` bytes starting at in's position.
// Malformed or truncated bytes -> IOError; another dtype, a Fortran-order layout or a
// dtype other than `expected` -> DTypeError. Bytes after the data are ignored when
// `allow_trailing` (numpy.load ignores them in a file), an IOError otherwise.
Tensor read_npy(std::istream& in, std::uint64_t size, const NpyOrigin& origin, std::optional<DType> expected,
                bool allow_trailing);

// Bytes as text for error messages: printable ASCII as is, the rest as \xHH; cut after `limit`.
std::string escaped(std::string_view bytes, std::size_t limit = 160);

}  // namespace recur::detail
