#include <recur/core/safetensors.hpp>

#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include <recur/core/npy_format.hpp>
#include <recur/core/safetensors_detail.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kSave = "save_safetensors";
constexpr std::size_t kAlign = 8;  // the data section starts at a multiple of 8 bytes

std::string_view format_name(DType d) {
  for (const auto& [dtype, name] : detail::kSafetensorsDTypes)
    if (dtype == d) return name;
  fail<DTypeError>(kSave, "no safetensors dtype for ", d);
}

// `s` as a JSON string literal (nlohmann-json escapes it); ValueError naming `what` when
// it is not UTF-8.
std::string json_string(const std::string& s, const std::string& what) {
  try {
    return nlohmann::json(s).dump();
  } catch (const nlohmann::json::type_error&) {
    fail<ValueError>(kSave, what, " '", detail::escaped(s), "' is not valid UTF-8");
  }
}

// {"__metadata__":{...},"<name>":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},...}
// padded with spaces to a multiple of 8 bytes.
std::string header_of(const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  std::string header = "{";
  if (!metadata.empty()) {
    header.append("\"").append(detail::kSafetensorsMetadataKey).append("\":{");
    for (const auto& [key, value] : metadata) {
      if (header.back() != '{') header += ',';
      header.append(json_string(key, "the metadata key"))
          .append(":")
          .append(json_string(value, "the value of metadata key '" + detail::escaped(key) + "',"));
    }
    header += '}';
  }
  std::set<std::string_view> seen;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < tensors.size(); ++i) {
    const auto& [name, t] = tensors[i];
    if (name == detail::kSafetensorsMetadataKey)
      fail<ValueError>(kSave, "tensor ", i, " is named '", name, "', the key the format keeps for the metadata");
    if (!seen.insert(name).second) fail<ValueError>(kSave, "the name '", detail::escaped(name), "' appears twice");
    if (!t.defined()) fail<ValueError>(kSave, "tensor '", detail::escaped(name), "' is undefined (default-constructed)");
    if (header.size() > 1) header += ',';
    header.append(json_string(name, "the name of tensor " + std::to_string(i))).append(":{\"dtype\":\"");
    header.append(format_name(t.dtype())).append("\",\"shape\":[");
    for (std::size_t a = 0; a < t.shape().size(); ++a) header.append(a ? "," : "").append(std::to_string(t.shape()[a]));
    header.append("],\"data_offsets\":[").append(std::to_string(offset)).append(",");
    offset += t.nbytes();
    header.append(std::to_string(offset)).append("]}");
  }
  header += '}';
  header.append((kAlign - header.size() % kAlign) % kAlign, ' ');
  return header;
}

}  // namespace

void save_safetensors(const fs::path& path, const NamedTensors& tensors, const SafetensorsMetadata& metadata) {
  const std::string header = header_of(tensors, metadata);
  if (header.size() > detail::kSafetensorsMaxHeaderBytes)
    fail<ValueError>(kSave, "'", path.string(), "': the header would take ", header.size(),
                     " bytes, over the format's limit of ", detail::kSafetensorsMaxHeaderBytes);
  detail::write_atomically(path, kSave, [&](detail::FileSink& out) {
    char length[8];
    for (std::size_t b = 0; b < sizeof length; ++b) length[b] = static_cast<char>((header.size() >> (8 * b)) & 0xFF);
    out.write(length, sizeof length);
    out.write(header.data(), header.size());
    for (const auto& [name, t] : tensors) out.write(t.raw_data(), t.nbytes());
  });
}

void save_safetensors_map(const fs::path& path, const TensorMap& tensors, const SafetensorsMetadata& metadata) {
  save_safetensors(path, NamedTensors(tensors.begin(), tensors.end()), metadata);  // handles: no data is copied
}

Safetensors load_safetensors(const fs::path& path, const SafetensorsOptions& options) {
  detail::SafetensorsReader reader(path, "load_safetensors");
  for (const auto& e : reader.entries()) reader.check_dtype(e, options.convert_half_to_float32);
  Safetensors out{.tensors = {}, .metadata = reader.metadata()};
  for (const auto& e : reader.entries()) out.tensors.emplace_back(e.name, reader.read(e, options.convert_half_to_float32));
  return out;
}

SafetensorsMap load_safetensors_map(const fs::path& path, const SafetensorsOptions& options) {
  Safetensors file = load_safetensors(path, options);
  SafetensorsMap out{.tensors = {}, .metadata = std::move(file.metadata)};
  for (auto& [name, t] : file.tensors) out.tensors.emplace(std::move(name), std::move(t));  // names are unique (checked)
  return out;
}

}  // namespace recur
