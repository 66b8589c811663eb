// SafetensorsReader: the header parsed by nlohmann-json's SAX parser into recur's own
// structures as it is read (no JSON document is built, so a header costs memory in
// proportion to what it declares, and anything but the format's shape is refused at the
// first token), then the layout checked, then tensors read on demand.
#include <recur/core/safetensors_detail.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <limits>
#include <new>
#include <numeric>
#include <optional>
#include <set>

#include <nlohmann/json.hpp>

#include <recur/core/npy_format.hpp>

namespace recur::detail {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

static_assert(std::endian::native == std::endian::little, "recur's safetensors code assumes a little-endian host");

constexpr std::uint64_t kLengthBytes = 8;
constexpr std::size_t kMaxRank = 64;                     // NumPy's

// The format's dtypes and their sizes in bits (F4 and F6 pack elements below a byte).
struct FormatDType {
  std::string_view name;
  unsigned bits;
};
constexpr FormatDType kFormatDTypes[] = {
    {"BOOL", 8},    {"U8", 8},   {"I8", 8},   {"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"I16", 16},
    {"U16", 16},    {"F16", 16}, {"BF16", 16}, {"I32", 32},    {"U32", 32},    {"F32", 32},    {"I64", 64},
    {"U64", 64},    {"F64", 64}, {"F4", 4},   {"F6_E2M3", 6}, {"F6_E3M2", 6}};

const FormatDType* format_dtype(std::string_view name) {
  for (const FormatDType& d : kFormatDTypes)
    if (d.name == name) return &d;
  return nullptr;
}

std::string format_dtype_names() {
  std::string out;
  for (const FormatDType& d : kFormatDTypes) out.append(out.empty() ? "" : ", ").append(d.name);
  return out;
}

std::optional<DType> recur_dtype(std::string_view name) {
  for (const auto& [dtype, format_name] : kSafetensorsDTypes)
    if (format_name == name) return dtype;
  return std::nullopt;
}

template <class... Parts>
[[noreturn]] void malformed_file(std::string_view op, const fs::path& path, const Parts&... parts) {
  fail<IOError>(op, "'", path.string(), "': ", parts...);
}

// IEEE 754 binary16 -> binary32, exactly (every half is a float).
std::uint32_t f16_to_f32_bits(std::uint16_t h) {
  const std::uint32_t sign = std::uint32_t{h & 0x8000u} << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1F, mantissa = h & 0x3FFu;
  if (exponent == 0x1F) return sign | 0x7F800000u | (mantissa << 13);  // inf, NaN (payload kept)
  if (exponent != 0) return sign | ((exponent + 127 - 15) << 23) | (mantissa << 13);
  if (mantissa == 0) return sign;  // +-0
  // Subnormal: mantissa * 2^-24; normalized, the leading 1 moves to bit 10.
  const int shift = std::countl_zero(mantissa) - 21;  // mantissa < 2^10 sits in the low bits
  return sign | (static_cast<std::uint32_t>(127 - 15 + 1 - shift) << 23) | ((mantissa << shift) & 0x3FFu) << 13;
}

// bfloat16 is the top half of a binary32.
std::uint32_t bf16_to_f32_bits(std::uint16_t b) { return std::uint32_t{b} << 16; }

// The SAX events of the header, turned into entries and metadata, in the only shape the
// format allows: an object whose values are tensor entries or the metadata object.
class HeaderHandler {
 public:
  HeaderHandler(std::string_view op, const fs::path& path, std::vector<SafetensorsEntry>& entries,
                SafetensorsMetadata& metadata)
      : op_(op), path_(path), entries_(entries), metadata_(metadata) {}

  bool null() { found("null"); }
  bool boolean(bool) { found("a boolean"); }
  bool number_integer(json::number_integer_t v) {  // nlohmann reports only negative integers here
    found("the negative number " + std::to_string(v));
  }
  bool number_unsigned(json::number_unsigned_t v) {
    if (at_ == At::shape) {
      if (entry_.shape.size() == kMaxRank)
        malformed("tensor '", escaped(entry_.name), "' has more than ", kMaxRank, " dimensions");
      if (v > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        found("the dimension " + std::to_string(v));
      entry_.shape.push_back(static_cast<std::int64_t>(v));
      return true;
    }
    if (at_ == At::offsets) {
      if (offsets_ == 2) found("a third offset");
      (offsets_++ == 0 ? entry_.begin : entry_.end) = v;
      return true;
    }
    found("the number " + std::to_string(v));
  }
  bool number_float(json::number_float_t, const json::string_t& text) { found("the number " + escaped(text, 40)); }
  bool binary(json::binary_t&) { found("binary data"); }
  bool string(json::string_t& s) {
    if (at_ == At::metadata) {
      metadata_[field_] = s;
      return true;
    }
    if (at_ == At::entry && field_ == "dtype") {
      entry_.dtype = s;
      return true;
    }
    found("the string '" + escaped(s, 40) + "'");
  }

  bool start_object(std::size_t) {
    if (at_ == At::start) return at_ = At::top, true;
    if (at_ == At::top && name_ == kSafetensorsMetadataKey) return at_ = At::metadata, true;
    if (at_ == At::top) {
      entry_ = SafetensorsEntry();
      entry_.name = name_;
      fields_.clear();
      offsets_ = 0;
      return at_ = At::entry, true;
    }
    found("an object");
  }
  bool key(json::string_t& k) {
    if (at_ == At::top) {
      if (!names_.insert(k).second) malformed("the key '", escaped(k), "' appears twice");
      name_ = k;
    } else if (at_ == At::metadata) {
      if (metadata_.contains(k)) malformed("the key '", escaped(k), "' appears twice in '", kSafetensorsMetadataKey, "'");
      field_ = k;
    } else {
      if (k != "dtype" && k != "shape" && k != "data_offsets")
        malformed("tensor '", escaped(name_), "' has the key '", escaped(k),
                  "'; an entry has exactly \"dtype\", \"shape\" and \"data_offsets\"");
      if (!fields_.insert(k).second) malformed("tensor '", escaped(name_), "' has the key '", k, "' twice");
      field_ = k;
    }
    return true;
  }
  bool end_object() {
    if (at_ == At::entry) {
      if (fields_.size() != 3)
        malformed("tensor '", escaped(name_), "' lacks ",
                  !fields_.contains("dtype") ? "\"dtype\"" : !fields_.contains("shape") ? "\"shape\"" : "\"data_offsets\"");
      entries_.push_back(std::move(entry_));
      at_ = At::top;
    } else {
      at_ = at_ == At::metadata ? At::top : At::end;
    }
    return true;
  }
  bool start_array(std::size_t) {
    if (at_ == At::entry && field_ == "shape") return at_ = At::shape, true;
    if (at_ == At::entry && field_ == "data_offsets") return at_ = At::offsets, true;
    found("an array");
  }
  bool end_array() {
    if (at_ == At::offsets && offsets_ != 2) found(offsets_ == 0 ? "no offset" : "one offset");
    at_ = At::entry;
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    malformed("not valid JSON: ", escaped(e.what(), 300));
  }

 private:
  enum class At { start, top, metadata, entry, shape, offsets, end };

  template <class... Parts>
  [[noreturn]] void malformed(const Parts&... parts) const {
    malformed_file(op_, path_, "malformed header: ", parts...);
  }
  // What the format wants where the parser is: the message for anything else.
  [[noreturn]] void found(const std::string& what) const {
    const std::string tensor = "tensor '" + escaped(name_) + "': ";
    if (at_ == At::start) malformed("the header is not a JSON object");
    if (at_ == At::top && name_ == kSafetensorsMetadataKey)
      malformed("'", kSafetensorsMetadataKey, "' must be an object of strings, found ", what);
    if (at_ == At::top) malformed(tensor, "the entry must be an object {dtype, shape, data_offsets}, found ", what);
    if (at_ == At::metadata)
      malformed("'", kSafetensorsMetadataKey, "': the value of '", escaped(field_), "' must be a string, found ", what);
    if (field_ == "dtype") malformed(tensor, "\"dtype\" must be a string, found ", what);
    if (field_ == "shape")
      malformed(tensor, "\"shape\" must be an array of non-negative integers below 2^63, found ", what);
    malformed(tensor, "\"data_offsets\" must be an array of two non-negative integers, found ", what);
  }

  std::string_view op_;
  const fs::path& path_;
  std::vector<SafetensorsEntry>& entries_;
  SafetensorsMetadata& metadata_;
  At at_ = At::start;
  std::set<std::string, std::less<>> names_;  // the top-level keys so far
  std::set<std::string, std::less<>> fields_;  // the current entry's keys so far
  std::string name_, field_;                   // the current top-level key; the current key below it
  SafetensorsEntry entry_;
  int offsets_ = 0;
};

// "'w' (data_offsets [0, 24])"
std::string placed(const SafetensorsEntry& e) {
  return concat("'", escaped(e.name), "' (data_offsets [", e.begin, ", ", e.end, "])");
}

}  // namespace

SafetensorsReader::SafetensorsReader(const fs::path& path, std::string_view op)
    : path_(path), op_(op), file_(open_input(path, op)) {
  const auto malformed = [&](const auto&... parts) { malformed_file(op_, path_, parts...); };
  if (file_.size < kLengthBytes)
    malformed("truncated: ", file_.size, " bytes, fewer than the 8 bytes of the header length (not a safetensors file?)");
  unsigned char length[kLengthBytes];
  file_.stream.read(reinterpret_cast<char*>(length), kLengthBytes);
  std::uint64_t n = 0;
  for (std::size_t b = 0; b < kLengthBytes; ++b) n |= std::uint64_t{length[b]} << (8 * b);
  if (n > kSafetensorsMaxHeaderBytes)
    malformed("a header length of ", n, " bytes is over the format's limit of ", kSafetensorsMaxHeaderBytes,
              " (not a safetensors file?)");
  if (n > file_.size - kLengthBytes)
    malformed("truncated: the header length is ", n, " bytes, but only ", file_.size - kLengthBytes,
              " bytes follow it");
  data_start_ = kLengthBytes + n;
  // The header and what it declares take memory in proportion to n (at most a few times
  // 100 MB): std::bad_alloc never escapes.
  std::vector<SafetensorsEntry> in_header;
  try {
    std::string header(n, '\0');
    file_.stream.read(header.data(), static_cast<std::streamsize>(n));
    if (static_cast<std::uint64_t>(file_.stream.gcount()) != n) malformed("cannot read the header (did the file change?)");
    if (header.empty() || header.front() != '{')
      malformed("malformed header: the header is not a JSON object (it starts with '", escaped(header, 20), "')");
    HeaderHandler handler(op_, path_, in_header, metadata_);
    if (!json::sax_parse(header.begin(), header.end(), &handler)) malformed("malformed header: not valid JSON");
  } catch (const std::bad_alloc&) {
    fail<MemoryError>(op_, "'", path_.string(), "': the system cannot hold its header of ", n, " bytes");
  }

  // Each entry on its own: a dtype of the format, as many bytes as its shape needs.
  const std::uint64_t data_bytes = file_.size - data_start_;
  for (const SafetensorsEntry& e : in_header) {
    const std::string tensor = "tensor '" + escaped(e.name) + "': ";
    const FormatDType* dtype = format_dtype(e.dtype);
    if (!dtype)
      malformed(tensor, "unknown dtype '", escaped(e.dtype), "' (the format's dtypes are ", format_dtype_names(), ")");
    if (e.end < e.begin) malformed(tensor, "data_offsets [", e.begin, ", ", e.end, "] end before they begin");
    std::int64_t count = 1;  // as recur's numel: the sizes other than 0 must multiply within int64
    bool empty = false;
    for (const std::int64_t d : e.shape) {
      if (d != 0 && __builtin_mul_overflow(count, d, &count))
        malformed(tensor, "shape ", to_string(e.shape), " has more elements than int64 counts");
      empty = empty || d == 0;
    }
    std::uint64_t bits = 0;
    if (__builtin_mul_overflow(static_cast<std::uint64_t>(empty ? 0 : count), dtype->bits, &bits))
      malformed(tensor, e.dtype, " of shape ", to_string(e.shape), " would take more than 2^64 bits");
    if (bits % 8 != 0)
      malformed(tensor, e.dtype, " of shape ", to_string(e.shape), " takes ", bits, " bits, not a whole number of bytes");
    if (e.end - e.begin != bits / 8)
      malformed(tensor, e.dtype, " of shape ", to_string(e.shape), " takes ", bits / 8, " bytes, but data_offsets [",
                e.begin, ", ", e.end, "] hold ", e.end - e.begin);
    if (e.end > data_bytes)
      malformed("truncated: tensor ", placed(e), " runs past the end of the data section (", data_bytes, " bytes)");
  }
  // Together, sorted by offset: they tile the data section exactly.
  std::vector<std::size_t> order(in_header.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    return std::pair(in_header[a].begin, in_header[a].end) < std::pair(in_header[b].begin, in_header[b].end);
  });
  std::uint64_t covered = 0;
  const SafetensorsEntry* previous = nullptr;
  for (const std::size_t i : order) {
    const SafetensorsEntry& e = in_header[i];
    if (e.begin < covered) malformed("tensors ", placed(*previous), " and ", placed(e), " overlap");
    if (e.begin > covered)
      malformed("a gap: bytes ", covered, " to ", e.begin, " of the data section belong to no tensor (",
                previous ? "between " + placed(*previous) + " and " : "before ", placed(e), ")");
    covered = e.end;
    previous = &e;
  }
  if (covered != data_bytes)
    malformed("the last ", data_bytes - covered, " bytes of the data section belong to no tensor (the data section has ",
              data_bytes, " bytes, the tensors end at ", covered, ")");
  for (const std::size_t i : order) {
    by_name_.emplace(in_header[i].name, entries_.size());
    entries_.push_back(std::move(in_header[i]));
  }
}

const SafetensorsEntry* SafetensorsReader::find(std::string_view name) const {
  const auto it = by_name_.find(name);
  return it == by_name_.end() ? nullptr : &entries_[it->second];
}

bool SafetensorsReader::is_half(const SafetensorsEntry& e) { return e.dtype == "F16" || e.dtype == "BF16"; }

void SafetensorsReader::check_dtype(const SafetensorsEntry& e, bool convert_half) const {
  if (recur_dtype(e.dtype) || (convert_half && is_half(e))) return;
  if (is_half(e))
    fail<DTypeError>(op_, "'", path_.string(), "': tensor '", escaped(e.name), "' is ", e.dtype,
                     ", which recur reads only into float32, when asked to (SafetensorsOptions::convert_half_to_float32)");
  fail<DTypeError>(op_, "'", path_.string(), "': tensor '", escaped(e.name), "' is ", e.dtype,
                   ", which recur does not read (F32, F64 and I64 are read as they are; F16 and BF16 into float32)");
}

Tensor SafetensorsReader::read(const SafetensorsEntry& e, bool convert_half) {
  check_dtype(e, convert_half);
  const std::optional<DType> dtype = recur_dtype(e.dtype);
  Tensor t = Tensor::empty(e.shape, dtype.value_or(DType::float32));
  const std::uint64_t bytes = e.end - e.begin;
  if (bytes == 0) return t;
  // A half tensor's bytes go into the upper half of its float32 buffer and are widened
  // front to back: the float written at element i covers halves 2i - n and 2i - n + 1,
  // both already read (n elements, i < n).
  char* const at = static_cast<char*>(t.raw_data()) + (t.nbytes() - bytes);
  file_.stream.seekg(static_cast<std::streamoff>(data_start_ + e.begin));
  file_.stream.read(at, static_cast<std::streamsize>(bytes));
  if (static_cast<std::uint64_t>(file_.stream.gcount()) != bytes)
    fail<IOError>(op_, "'", path_.string(), "': tensor '", escaped(e.name), "': read ", file_.stream.gcount(),
                  " bytes where ", bytes, " were expected (did the file change?)");
  if (dtype) return t;
  const auto widen = e.dtype == "F16" ? f16_to_f32_bits : bf16_to_f32_bits;
  auto* out = static_cast<std::uint32_t*>(t.raw_data());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    std::uint16_t h;
    std::memcpy(&h, at + 2 * i, 2);
    out[i] = widen(h);
  }
  return t;
}

}  // namespace recur::detail
