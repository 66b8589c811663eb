#pragma once
// Named tensors in Hugging Face's safetensors format, the one model weights are published
// in: an 8-byte little-endian header length N, N bytes of UTF-8 JSON, then the data
// section, every tensor's bytes little-endian and row-major, back to back. The JSON object
// maps each tensor's name to {"dtype": "F32", "shape": [2, 3], "data_offsets": [begin,
// end]} (offsets into the data section), and may hold "__metadata__", an object of strings.
//   Python:  safetensors.numpy.save_file({"w": w}, "w.safetensors", metadata={"format": "np"})
//            safetensors.torch.load_file("w.safetensors")["w"]
//
// What save_safetensors writes, so that any reader can check it: the header as compact JSON
// with "__metadata__" first (only when there is metadata), then the tensors in the order
// given (name order for the map), each entry's keys in the order dtype, shape,
// data_offsets; the JSON padded with spaces to a multiple of 8 bytes; the tensors' bytes
// back to back in the same order. F32, F64 or I64 for float32, float64 and int64. The same
// tensors and metadata give the same bytes.
//
// What load_safetensors checks before any tensor is read (the format's rules; any break
// is an IOError naming the path, the tensor when there is one, and what is wrong): the file
// holds the 8 bytes of the length and the N bytes of header (N at most 100,000,000, the
// format's own limit); the header is a JSON object (first byte '{'), every key once; each
// entry has exactly dtype (one of the format's), shape (at most 64 non-negative integers)
// and data_offsets (two integers, begin <= end); "__metadata__" maps strings to strings;
// each tensor's byte count is its element count times its dtype's size (no overflow); and
// the tensors, sorted by offset, tile the data section exactly: no gap, no overlap, no byte
// after the last, none missing (a truncated file). Memory is allocated only for the header
// and for tensors whose bytes are in the file.
//
// Names are any UTF-8 strings but "__metadata__", each once (the names recur's modules give
// are such). Metadata keys and values are UTF-8 strings.
#include <filesystem>
#include <map>
#include <string>

#include <recur/core/npz.hpp>

namespace recur {

// The header's "__metadata__": free-form strings (Hugging Face writes {"format": "pt"}).
using SafetensorsMetadata = std::map<std::string, std::string>;

struct SafetensorsOptions {
  // F16 (IEEE half) and BF16 (bfloat16) tensors, which recur has no dtype for, are read
  // into float32 (every value exactly: subnormals, infinities and NaNs included) when this is
  // true, and are a DTypeError naming the tensor and its dtype when false.
  bool convert_half_to_float32 = false;
};

// A file's tensors in the order of their bytes in the file, and its metadata (empty when
// the file has none).
struct Safetensors {
  NamedTensors tensors;
  SafetensorsMetadata metadata;
};
// The same by name.
struct SafetensorsMap {
  TensorMap tensors;
  SafetensorsMetadata metadata;
};

// Replaces `path` atomically, as save_npz does (the old file stays intact if anything
// fails: IOError). Undefined tensors, a name twice or "__metadata__", strings that are not
// UTF-8, or a header over the format's limit: ValueError, before any file is touched.
void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const SafetensorsMetadata& metadata = {});
void save_safetensors_map(const std::filesystem::path& path, const TensorMap& tensors,
                          const SafetensorsMetadata& metadata = {});

// Reads every tensor after the checks above. F32, F64 and I64 become float32, float64 and
// int64 tensors; F16 and BF16 float32 with SafetensorsOptions::convert_half_to_float32;
// any other dtype of the format (BOOL, U8, I32, F8_E4M3, ...) is a DTypeError naming the
// tensor and the dtype. Missing, unreadable or malformed files: IOError.
Safetensors load_safetensors(const std::filesystem::path& path, const SafetensorsOptions& options = {});
SafetensorsMap load_safetensors_map(const std::filesystem::path& path, const SafetensorsOptions& options = {});

}  // namespace recur
