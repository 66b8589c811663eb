#pragma once
// Tensors in NumPy's .npy format: float32 ('<f4'), float64 ('<f8') and int64 ('<i8'),
// little-endian, C order. save_npy writes format 1.0 byte for byte as numpy.save does;
// load_npy reads formats 1.0, 2.0 and 3.0 and validates every byte it relies on:
//   missing file, bad magic, truncated header or data, malformed header -> IOError
//   (naming the path, what was expected and what was found);
//   another dtype ('<i4', '>f8', a structured dtype) or a Fortran-order array of rank >= 2
//   -> DTypeError naming the dtype string.
#include <filesystem>

#include <recur/core/tensor.hpp>

namespace recur {

// Replaces the file atomically (a reader sees the old file or the new one, never a part).
// Throws IOError when the file cannot be written, ValueError for an undefined tensor.
void save_npy(const std::filesystem::path& path, const Tensor& t);
Tensor load_npy(const std::filesystem::path& path);
// As load_npy, and throws DTypeError (before reading the data) when the file holds
// another dtype.
Tensor load_npy(const std::filesystem::path& path, DType expected_dtype);

}  // namespace recur
