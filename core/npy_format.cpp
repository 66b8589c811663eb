#include <recur/core/npy_format.hpp>

#include <algorithm>
#include <bit>
#include <charconv>

namespace recur::detail {
namespace {

// Element bytes are written and read as they lie in memory, which the format stores
// little-endian.
static_assert(std::endian::native == std::endian::little, "recur's .npy code assumes a little-endian host");

constexpr std::string_view kMagic = "\x93NUMPY";
constexpr std::size_t kAlign = 64;          // numpy aligns the data to 64 bytes
constexpr std::size_t kGrowthDigits = 21;   // numpy leaves room for axis 0 to grow to this many digits
constexpr std::uint64_t kMaxHeaderBytes = std::uint64_t{1} << 20;  // refuse absurd headers

std::string_view descr_of(DType d) {
  switch (d) {
    case DType::float32: return "<f4";
    case DType::float64: return "<f8";
    case DType::int64: break;
  }
  return "<i8";
}

std::optional<DType> dtype_of_descr(std::string_view s) {
  for (DType d : {DType::float32, DType::float64, DType::int64})
    if (s == descr_of(d)) return d;
  return std::nullopt;
}

template <class... Parts>
[[noreturn]] void corrupt(const NpyOrigin& origin, const Parts&... parts) {
  fail<IOError>(origin.op, origin.where, ": ", parts...);
}

struct Header {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// A recursive-descent reader for the Python dict literal of a .npy header, e.g.
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }. Keys in any order.
class HeaderParser {
 public:
  HeaderParser(std::string_view text, const NpyOrigin& origin) : s_(text), origin_(origin) {}

  Header parse() {
    Header h;
    bool has_descr = false, has_order = false, has_shape = false;
    expect('{', "'{'");
    while (!consume('}')) {
      const std::string key = string_literal();
      expect(':', "':' after key '" + key + "'");
      if (key == "descr" && !has_descr) {
        skip_space();
        if (i_ < s_.size() && s_[i_] != '\'' && s_[i_] != '"')
          fail<DTypeError>(origin_.op, origin_.where, ": unsupported dtype ", escaped(s_.substr(i_), 60),
                           " (structured dtypes are not supported)");
        h.descr = string_literal();
        has_descr = true;
      } else if (key == "fortran_order" && !has_order) {
        h.fortran_order = boolean();
        has_order = true;
      } else if (key == "shape" && !has_shape) {
        h.shape = tuple();
        has_shape = true;
      } else {
        error("the key 'descr', 'fortran_order' or 'shape' (each once), not '" + escaped(key) + "'");
      }
      if (!consume(',')) {
        expect('}', "',' or '}'");
        break;
      }
    }
    skip_space();
    if (i_ != s_.size()) error("the end of the header after '}'");
    if (!has_descr || !has_order || !has_shape)
      error("the keys 'descr', 'fortran_order' and 'shape' before '}'");
    return h;
  }

 private:
  [[noreturn]] void error(const std::string& expected) const {
    corrupt(origin_, "malformed header: expected ", expected, " at byte ", i_, " of the header '", escaped(s_), "'");
  }
  void skip_space() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\n' || s_[i_] == '\t' || s_[i_] == '\r')) ++i_;
  }
  bool consume(char c) {
    skip_space();
    if (i_ < s_.size() && s_[i_] == c) return ++i_, true;
    return false;
  }
  void expect(char c, const std::string& what) {
    if (!consume(c)) error(what);
  }
  bool word(std::string_view w) {
    skip_space();
    if (s_.substr(i_, w.size()) != w) return false;
    i_ += w.size();
    return true;
  }
  std::string string_literal() {
    skip_space();
    if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) error("a quoted string");
    const char quote = s_[i_];
    const std::size_t end = s_.find(quote, i_ + 1);
    if (end == std::string_view::npos) error("a closing quote");
    const std::string_view body = s_.substr(i_ + 1, end - i_ - 1);
    if (body.find_first_of("\\\n") != std::string_view::npos) error("a plain string without escapes");
    i_ = end + 1;
    return std::string(body);
  }
  bool boolean() {
    if (word("True")) return true;
    if (word("False")) return false;
    error("True or False");
  }
  // (), (n,) or (n, m, ...): a Python tuple of non-negative ints.
  Shape tuple() {
    Shape shape;
    expect('(', "'(' opening the shape");
    if (consume(')')) return shape;
    while (true) {
      skip_space();
      std::int64_t d = 0;
      const auto [end, ec] = std::from_chars(s_.data() + i_, s_.data() + s_.size(), d);
      if (ec != std::errc{} || d < 0) error("a non-negative dimension below 2^63");
      i_ = static_cast<std::size_t>(end - s_.data());
      shape.push_back(d);
      if (consume(',')) {
        if (consume(')')) return shape;
      } else {
        expect(')', "',' or ')' in the shape");
        if (shape.size() == 1) error("',' after the only dimension (a 1-tuple)");
        return shape;
      }
    }
  }

  std::string_view s_;
  std::size_t i_ = 0;
  const NpyOrigin& origin_;
};

// Row-major memory equals Fortran-order memory when at most one axis is longer than 1.
bool same_in_fortran_order(const Shape& shape) {
  int long_axes = 0;
  for (auto d : shape) {
    if (d == 0) return true;
    long_axes += d > 1;
  }
  return long_axes <= 1;
}

// Reads exactly n bytes at the stream's position; a short read means the file changed.
void read_exactly(std::istream& in, char* dst, std::uint64_t n, const NpyOrigin& origin) {
  in.read(dst, static_cast<std::streamsize>(n));
  if (static_cast<std::uint64_t>(in.gcount()) != n)
    corrupt(origin, "read ", in.gcount(), " bytes where ", n, " were expected (did the file change?)");
}

}  // namespace

std::string escaped(std::string_view bytes, std::size_t limit) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (std::size_t i = 0; i < bytes.size() && i < limit; ++i) {
    const auto c = static_cast<unsigned char>(bytes[i]);
    if (c >= 0x20 && c < 0x7f && c != '\\') out += static_cast<char>(c);
    else out += {'\\', 'x', hex[c >> 4], hex[c & 15]};
  }
  if (bytes.size() > limit) out += "...";
  return out;
}

// Magic, version, header length, the dict with spare room, then spaces and '\n' up to a
// multiple of 64 bytes.
std::string npy_header(const Tensor& t) {
  const Shape& shape = t.shape();
  std::string dict = "{'descr': '" + std::string(descr_of(t.dtype())) + "', 'fortran_order': False, 'shape': (";
  for (std::size_t i = 0; i < shape.size(); ++i) dict += (i ? ", " : "") + std::to_string(shape[i]);
  dict += shape.size() == 1 ? ",), }" : "), }";
  if (!shape.empty()) dict.append(kGrowthDigits - std::to_string(shape[0]).size(), ' ');
  const std::size_t hlen = dict.size() + 1;  // with the final '\n'
  // Version 1.0 stores the header length in 2 bytes, 2.0 in 4.
  std::size_t prefix = 10, pad = kAlign - (prefix + hlen) % kAlign;
  if (hlen + pad > 0xFFFF) prefix = 12, pad = kAlign - (prefix + hlen) % kAlign;
  const std::size_t total = hlen + pad;
  std::string out(kMagic);
  out += static_cast<char>(prefix == 10 ? 1 : 2);
  out += '\0';
  for (std::size_t b = 0; b < prefix - 8; ++b) out += static_cast<char>((total >> (8 * b)) & 0xFF);
  out += dict;
  out.append(pad, ' ');
  out += '\n';
  return out;
}

Tensor read_npy(std::istream& in, std::uint64_t size, const NpyOrigin& origin, std::optional<DType> expected,
                bool allow_trailing) {
  const std::streamoff base = in.tellg();
  if (base < 0) corrupt(origin, "cannot read the stream position");

  // Preamble: magic (6 bytes), version (2), header length (2 bytes in 1.0, 4 in 2.0/3.0).
  char pre[12] = {};
  const std::uint64_t got = std::min<std::uint64_t>(size, sizeof pre);
  read_exactly(in, pre, got, origin);
  const std::string_view found(pre, std::min<std::uint64_t>(got, kMagic.size()));
  if (found != kMagic.substr(0, found.size()))
    corrupt(origin, "not an .npy file: expected the magic bytes ", escaped(kMagic), ", found ", escaped(found));
  if (got < 8)
    corrupt(origin, "truncated header: expected at least 10 bytes (magic, version, header length), found ", size);
  const int major = static_cast<unsigned char>(pre[6]), minor = static_cast<unsigned char>(pre[7]);
  if (major < 1 || major > 3 || minor != 0)
    corrupt(origin, "unsupported .npy format version ", major, ".", minor, " (expected 1.0, 2.0 or 3.0)");
  const std::uint64_t prefix = major == 1 ? 10 : 12;
  if (size < prefix)
    corrupt(origin, "truncated header: expected at least ", prefix, " bytes for a version ", major,
            ".0 preamble, found ", size);
  std::uint64_t header_bytes = 0;
  for (std::uint64_t b = 8; b < prefix; ++b)
    header_bytes |= std::uint64_t{static_cast<unsigned char>(pre[b])} << (8 * (b - 8));
  if (header_bytes > kMaxHeaderBytes)
    corrupt(origin, "a header of ", header_bytes, " bytes is larger than the limit of ", kMaxHeaderBytes);
  if (size - prefix < header_bytes)
    corrupt(origin, "truncated header: expected ", header_bytes, " bytes of header after the ", prefix,
            "-byte preamble, found ", size - prefix);

  std::string text(header_bytes, '\0');
  in.seekg(base + static_cast<std::streamoff>(prefix));
  read_exactly(in, text.data(), header_bytes, origin);
  const Header h = HeaderParser(text, origin).parse();

  const std::optional<DType> dtype = dtype_of_descr(h.descr);
  if (!dtype)
    fail<DTypeError>(origin.op, origin.where, ": unsupported dtype '", escaped(h.descr),
                     "' (expected '<f4', '<f8' or '<i8')");
  if (h.fortran_order && !same_in_fortran_order(h.shape))
    fail<DTypeError>(origin.op, origin.where, ": unsupported layout of dtype '", h.descr,
                     "': fortran_order is True for shape ", to_string(h.shape), " (expected C order)");
  if (expected && *expected != *dtype)
    fail<DTypeError>(origin.op, origin.where, " holds ", *dtype, " ('", h.descr, "'), expected ", *expected);

  // numel * itemsize without overflow; the data must be there before anything is allocated.
  std::int64_t bytes = static_cast<std::int64_t>(size_of(*dtype));
  for (auto d : h.shape)
    if (__builtin_mul_overflow(bytes, d, &bytes)) corrupt(origin, "shape ", to_string(h.shape), " is too large");
  const std::uint64_t data_bytes = static_cast<std::uint64_t>(bytes);
  const std::uint64_t available = size - prefix - header_bytes;
  if (available < data_bytes)
    corrupt(origin, "truncated data: expected ", data_bytes, " bytes for ", *dtype, " of shape ",
            to_string(h.shape), ", found ", available);
  if (!allow_trailing && available > data_bytes)
    corrupt(origin, available - data_bytes, " unexpected bytes after the ", data_bytes, " bytes of data for ",
            *dtype, " of shape ", to_string(h.shape));

  Tensor t = Tensor::empty(h.shape, *dtype);
  read_exactly(in, static_cast<char*>(t.raw_data()), data_bytes, origin);
  return t;
}

}  // namespace recur::detail
