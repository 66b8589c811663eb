#pragma once
// A safetensors file opened and its header checked (core/safetensors.hpp lists the rules),
// its tensors read one by one on demand: load_safetensors reads them all, a module's load
// (autodiff/module_io.cpp) only those its parameters name. Internal.
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <recur/core/file_io.hpp>
#include <recur/core/safetensors.hpp>

namespace recur::detail {

// The header's key for the metadata, and the format's bound on the header's length.
inline constexpr std::string_view kSafetensorsMetadataKey = "__metadata__";
inline constexpr std::uint64_t kSafetensorsMaxHeaderBytes = 100'000'000;

// recur's dtypes under the format's names: what the writer writes and the reader reads as is.
struct SafetensorsDType {
  DType dtype;
  std::string_view name;
};
inline constexpr SafetensorsDType kSafetensorsDTypes[] = {
    {DType::float32, "F32"}, {DType::float64, "F64"}, {DType::int64, "I64"}};

// One tensor's entry in the header.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as the file spells it: "F32", "BF16", ...
  Shape shape;
  std::uint64_t begin = 0, end = 0;  // its bytes in the data section
};

class SafetensorsReader {
 public:
  // Opens `path` and checks its header and layout; IOError (naming `op`) when a rule is
  // broken. No tensor is read yet.
  SafetensorsReader(const std::filesystem::path& path, std::string_view op);

  // The entries in the order of their bytes in the file (header order among empty tensors
  // at the same offset).
  const std::vector<SafetensorsEntry>& entries() const { return entries_; }
  const SafetensorsMetadata& metadata() const { return metadata_; }
  // The entry named `name`, or null.
  const SafetensorsEntry* find(std::string_view name) const;

  // Whether the entry is F16 or BF16 (read only as float32).
  static bool is_half(const SafetensorsEntry& e);
  // DTypeError naming the tensor and its dtype unless read() can read it: F32, F64, I64,
  // and F16 or BF16 when `convert_half`.
  void check_dtype(const SafetensorsEntry& e, bool convert_half) const;
  // The entry's tensor (check_dtype first).
  Tensor read(const SafetensorsEntry& e, bool convert_half);

 private:
  const std::filesystem::path& path_;
  std::string_view op_;
  InputFile file_;
  std::uint64_t data_start_ = 0;  // 8 + the header's length
  std::vector<SafetensorsEntry> entries_;
  std::map<std::string, std::size_t, std::less<>> by_name_;
  SafetensorsMetadata metadata_;
};

}  // namespace recur::detail
