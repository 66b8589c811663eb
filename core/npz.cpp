#include <recur/core/npz.hpp>

#include <algorithm>
#include <numeric>
#include <optional>
#include <set>
#include <stdexcept>
#include <string_view>
#include <tuple>

#include <boost/crc.hpp>

#include <recur/core/file_io.hpp>
#include <recur/core/npy_format.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

// ZIP records, as laid out in PKWARE's APPNOTE.TXT section 4.3.
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint64_t kLocalBytes = 30, kCentralBytes = 46, kEndBytes = 22;
constexpr std::uint64_t kMaxCommentBytes = 0xFFFF;
constexpr std::uint16_t kVersionNeeded = 20;             // 2.0, as Python's zipfile writes for stored members
constexpr std::uint16_t kVersionMadeBy = (3 << 8) | 20;  // Unix, 2.0
constexpr std::uint16_t kFlagDescriptor = 0x0008;        // CRC and sizes follow the data
constexpr std::uint16_t kFlagUtf8 = 0x0800;              // the name is UTF-8
constexpr std::uint16_t kFlagsEncrypted = 0x0001 | 0x0040 | 0x2000;
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;       // 1980-01-01, the earliest DOS date
constexpr std::uint32_t kRegularFileAttributes = 0100644u << 16;  // -rw-r--r-- in the Unix half
constexpr std::uint16_t kZip64ExtraId = 0x0001;
constexpr std::uint32_t kZip64Marker = 0xFFFFFFFF;
constexpr std::uint64_t kMaxArchiveBytes = 0xFFFFFFFF;  // 32-bit offsets and sizes without ZIP64
constexpr std::size_t kMaxMembers = 0xFFFE;             // 0xFFFF in the end record means ZIP64
constexpr std::string_view kSuffix = ".npy";

// Why `name` cannot name an array ("" when it can): it must be a safe relative path.
std::string name_problem(std::string_view name) {
  if (name.empty()) return "is empty";
  if (name.find('\0') != std::string_view::npos) return "contains a NUL byte";
  if (name.size() + kSuffix.size() > 0xFFFF) return "is longer than 65531 bytes";
  if (name.front() == '/' || name.back() == '/') return "starts or ends with '/'";
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part.empty()) return "has an empty path component ('//')";
    if (part == "." || part == "..") return "has a '.' or '..' path component";
    start = end + 1;
  }
  return "";
}

std::string hex32(std::uint32_t v) {
  static constexpr char digits[] = "0123456789abcdef";
  std::string s = "0x00000000";
  for (int i = 9; i >= 2; --i, v >>= 4) s[static_cast<std::size_t>(i)] = digits[v & 15];
  return s;
}

// Little-endian fields of a record being built.
class Record {
 public:
  Record& u16(std::uint16_t v) { return put(v, 2); }
  Record& u32(std::uint64_t v) { return put(v, 4); }
  Record& bytes(std::string_view b) { return s_ += b, *this; }
  const std::string& str() const { return s_; }

 private:
  Record& put(std::uint64_t v, int n) {
    for (int i = 0; i < n; ++i) s_ += static_cast<char>((v >> (8 * i)) & 0xFF);
    return *this;
  }
  std::string s_;
};

// Little-endian field of `n` bytes at `at` in bytes already read; callers check the length
// first, so a short record here is a bug in this file.
std::uint64_t le(std::string_view s, std::size_t at, int n) {
  if (at > s.size() || s.size() - at < static_cast<std::size_t>(n)) throw std::logic_error("npz: field out of range");
  std::uint64_t v = 0;
  for (int i = 0; i < n; ++i)
    v |= std::uint64_t{static_cast<unsigned char>(s[at + static_cast<std::size_t>(i)])} << (8 * i);
  return v;
}
std::uint16_t u16(std::string_view s, std::size_t at) { return static_cast<std::uint16_t>(le(s, at, 2)); }
std::uint32_t u32(std::string_view s, std::size_t at) { return static_cast<std::uint32_t>(le(s, at, 4)); }

struct Member {
  std::string name;  // "<array name>.npy"
  std::uint16_t flags = 0;
  std::uint32_t crc = 0;
  std::uint64_t size = 0;  // stored: compressed and uncompressed sizes are equal
  std::uint64_t header_offset = 0;
  std::uint64_t data_offset = 0;  // known once the local header is read
};

class ArchiveReader {
 public:
  explicit ArchiveReader(const fs::path& path) : path_(path), file_(detail::open_input(path, "load_npz")) {}

  NamedTensors read() {
    if (file_.size > kMaxArchiveBytes)
      corrupt("the file has ", file_.size, " bytes; archives over 4 GiB (ZIP64) are not supported");
    read_end_record();
    read_central_directory();
    for (Member& m : members_) read_local_header(m);
    check_no_overlap();
    for (const Member& m : members_) check_crc(m);
    NamedTensors out;
    for (const Member& m : members_) {
      file_.stream.clear();
      file_.stream.seekg(static_cast<std::streamoff>(m.data_offset));
      detail::NpyOrigin origin{"load_npz", "'"};
      origin.where.append(path_.string()).append("', ").append(member(m));
      out.emplace_back(m.name.substr(0, m.name.size() - kSuffix.size()),
                       detail::read_npy(file_.stream, m.size, origin, std::nullopt, false));
    }
    return out;
  }

 private:
  template <class... Parts>
  [[noreturn]] void corrupt(const Parts&... parts) const {
    fail<IOError>("load_npz", "'", path_.string(), "': ", parts...);
  }
  std::string member(const Member& m) const { return "member '" + detail::escaped(m.name) + "'"; }

  std::string bytes_at(std::uint64_t offset, std::uint64_t n) {
    if (offset > file_.size || n > file_.size - offset)
      corrupt("truncated: ", n, " bytes at offset ", offset, " run past the end of the file (", file_.size, " bytes)");
    std::string s(n, '\0');
    file_.stream.clear();
    file_.stream.seekg(static_cast<std::streamoff>(offset));
    file_.stream.read(s.data(), static_cast<std::streamsize>(n));
    if (static_cast<std::uint64_t>(file_.stream.gcount()) != n)
      corrupt("read ", file_.stream.gcount(), " bytes at offset ", offset, " where ", n,
              " were expected (did the file change?)");
    return s;
  }

  // The end record is the last 22 bytes, unless an archive comment of up to 65535 bytes follows it.
  void read_end_record() {
    if (file_.size < kEndBytes)
      corrupt("not a ZIP archive: ", file_.size, " bytes is shorter than the ", kEndBytes,
              "-byte end-of-central-directory record (truncated?)");
    const std::uint64_t tail_bytes = std::min(file_.size, kEndBytes + kMaxCommentBytes);
    const std::string tail = bytes_at(file_.size - tail_bytes, tail_bytes);
    std::optional<std::size_t> at;
    for (std::size_t pos = tail.size() - kEndBytes + 1; pos-- > 0;)
      if (u32(tail, pos) == kEndSignature && pos + kEndBytes + u16(tail, pos + 20) == tail.size()) {
        at = pos;
        break;
      }
    if (!at) corrupt("not a ZIP archive, or truncated: no end-of-central-directory record at the end of the file");
    const std::string_view end = std::string_view(tail).substr(*at, kEndBytes);
    end_offset_ = file_.size - tail_bytes + *at;
    const std::uint16_t disk = u16(end, 4), directory_disk = u16(end, 6);
    const std::uint16_t disk_entries = u16(end, 8);
    entries_ = u16(end, 10);
    directory_bytes_ = u32(end, 12);
    directory_offset_ = u32(end, 16);
    if (entries_ == 0xFFFF || directory_bytes_ == kZip64Marker || directory_offset_ == kZip64Marker)
      corrupt("ZIP64 archives (over 4 GiB or 65535 members) are not supported");
    if (disk != 0 || directory_disk != 0 || disk_entries != entries_)
      corrupt("multi-disk archives are not supported (end record: disk ", disk, ", directory disk ", directory_disk,
              ", ", disk_entries, " of ", entries_, " entries on this disk)");
    if (directory_offset_ > end_offset_ || directory_bytes_ != end_offset_ - directory_offset_)
      corrupt("the central directory (", directory_bytes_, " bytes at offset ", directory_offset_,
              ") does not end where the end record starts (offset ", end_offset_, ")");
  }

  void read_central_directory() {
    const std::string dir = bytes_at(directory_offset_, directory_bytes_);
    std::set<std::string> names;
    std::size_t pos = 0;
    for (std::uint16_t i = 0; i < entries_; ++i) {
      if (dir.size() - pos < kCentralBytes || u32(dir, pos) != kCentralSignature)
        corrupt("central directory entry ", i, " of ", entries_, " at offset ", directory_offset_ + pos,
                " is truncated or lacks its signature");
      const std::string_view e = std::string_view(dir).substr(pos);
      const std::uint64_t variable = std::uint64_t{u16(e, 28)} + u16(e, 30) + u16(e, 32);
      if (e.size() - kCentralBytes < variable) corrupt("central directory entry ", i, " is truncated");
      Member m;
      m.name = std::string(e.substr(kCentralBytes, u16(e, 28)));
      m.flags = u16(e, 8);
      m.crc = u32(e, 16);
      m.size = u32(e, 20);
      m.header_offset = u32(e, 42);
      const std::uint16_t method = u16(e, 10), start_disk = u16(e, 34);
      const std::uint32_t uncompressed = u32(e, 24);
      if (m.flags & kFlagsEncrypted) corrupt(member(m), " is encrypted, which is not supported");
      if (method != 0)
        corrupt(member(m), " is compressed (method ", method, method == 8 ? ", deflate" : "",
                "): compression is not supported; write the archive with numpy.savez, not numpy.savez_compressed");
      if (m.size == kZip64Marker || uncompressed == kZip64Marker || m.header_offset == kZip64Marker)
        corrupt(member(m), " uses ZIP64 fields (a member over 4 GiB), which are not supported");
      if (m.size != uncompressed)
        corrupt(member(m), " is stored but records ", m.size, " compressed and ", uncompressed, " uncompressed bytes");
      if (start_disk != 0)
        corrupt(member(m), " starts on disk ", start_disk, ": multi-disk archives are not supported");
      const std::string_view name(m.name);
      if (name.size() < kSuffix.size() || name.substr(name.size() - kSuffix.size()) != kSuffix)
        corrupt(member(m), " is not an array: its name does not end in '.npy'");
      if (const std::string why = name_problem(name.substr(0, name.size() - kSuffix.size())); !why.empty())
        corrupt(member(m), ": the array name ", why);
      if (!names.insert(m.name).second) corrupt(member(m), " appears twice in the central directory");
      members_.push_back(std::move(m));
      pos += kCentralBytes + variable;
    }
    if (pos != dir.size())
      corrupt("the central directory has ", dir.size() - pos, " bytes after its ", entries_, " entries");
  }

  // The sizes of a local header whose 32-bit fields say "see the ZIP64 extra field", as
  // Python's zipfile writes for numpy.savez: uncompressed, then compressed, 8 bytes each.
  std::pair<std::uint64_t, std::uint64_t> zip64_sizes(const Member& m, std::string_view extra, std::uint64_t usize,
                                                      std::uint64_t csize) const {
    for (std::size_t pos = 0; pos < extra.size();) {
      if (extra.size() - pos < 4) corrupt(member(m), ": malformed extra field in the local header");
      const std::uint16_t id = u16(extra, pos), len = u16(extra, pos + 2);
      if (extra.size() - pos - 4 < len) corrupt(member(m), ": malformed extra field in the local header");
      if (id == kZip64ExtraId) {
        const std::string_view data = extra.substr(pos + 4, len);
        const std::size_t wanted = (usize == kZip64Marker ? 8u : 0u) + (csize == kZip64Marker ? 8u : 0u);
        if (data.size() < wanted) corrupt(member(m), ": the ZIP64 extra field is too short (", data.size(), " bytes)");
        std::size_t at = 0;
        if (usize == kZip64Marker) usize = le(data, at, 8), at += 8;
        if (csize == kZip64Marker) csize = le(data, at, 8);
        return {usize, csize};
      }
      pos += 4 + std::size_t{len};
    }
    corrupt(member(m), ": the local header marks ZIP64 sizes but has no ZIP64 extra field");
  }

  void read_local_header(Member& m) {
    if (m.header_offset > directory_offset_ || directory_offset_ - m.header_offset < kLocalBytes)
      corrupt(member(m), ": its local header at offset ", m.header_offset,
              " does not fit before the central directory (offset ", directory_offset_, ")");
    const std::string h = bytes_at(m.header_offset, kLocalBytes);
    if (u32(h, 0) != kLocalSignature)
      corrupt(member(m), ": no local header signature at offset ", m.header_offset);
    const std::uint16_t flags = u16(h, 6), method = u16(h, 8);
    if (flags != m.flags || method != 0)
      corrupt(member(m), ": the local header (flags ", flags, ", method ", method,
              ") disagrees with the central directory (flags ", m.flags, ", method 0)");
    const std::uint64_t name_bytes = u16(h, 26), variable = name_bytes + u16(h, 28);
    if (directory_offset_ - m.header_offset - kLocalBytes < variable)
      corrupt(member(m), ": its local header runs into the central directory");
    const std::string var = bytes_at(m.header_offset + kLocalBytes, variable);
    const std::string_view local_name = std::string_view(var).substr(0, name_bytes);
    if (local_name != m.name)
      corrupt(member(m), ": the local header names it '", detail::escaped(local_name), "'");
    // With a data descriptor the local CRC and sizes are blank; the central directory has them.
    if (!(flags & kFlagDescriptor)) {
      const std::uint32_t crc = u32(h, 14);
      auto [usize, csize] = std::pair<std::uint64_t, std::uint64_t>{u32(h, 22), u32(h, 18)};
      if (usize == kZip64Marker || csize == kZip64Marker)
        std::tie(usize, csize) = zip64_sizes(m, std::string_view(var).substr(name_bytes), usize, csize);
      if (crc != m.crc || csize != m.size || usize != m.size)
        corrupt(member(m), ": the local header (CRC-32 ", hex32(crc), ", sizes ", csize, " and ", usize,
                ") disagrees with the central directory (CRC-32 ", hex32(m.crc), ", size ", m.size, ")");
    }
    m.data_offset = m.header_offset + kLocalBytes + variable;
    if (directory_offset_ - m.data_offset < m.size)
      corrupt(member(m), ": its ", m.size, " bytes at offset ", m.data_offset,
              " run into the central directory (offset ", directory_offset_, ")");
  }

  void check_no_overlap() const {
    std::vector<const Member*> by_offset;
    for (const Member& m : members_) by_offset.push_back(&m);
    std::sort(by_offset.begin(), by_offset.end(),
              [](const Member* a, const Member* b) { return a->header_offset < b->header_offset; });
    for (std::size_t i = 1; i < by_offset.size(); ++i) {
      const Member &a = *by_offset[i - 1], &b = *by_offset[i];
      if (a.data_offset + a.size > b.header_offset)
        corrupt(member(a), " (bytes ", a.header_offset, " to ", a.data_offset + a.size, ") overlaps ", member(b),
                " (from byte ", b.header_offset, ")");
    }
  }

  void check_crc(const Member& m) {
    boost::crc_32_type crc;
    std::string chunk;
    for (std::uint64_t done = 0; done < m.size;) {
      const std::uint64_t n = std::min<std::uint64_t>(m.size - done, std::uint64_t{1} << 20);
      chunk = bytes_at(m.data_offset + done, n);
      crc.process_bytes(chunk.data(), chunk.size());
      done += n;
    }
    if (crc.checksum() != m.crc)
      corrupt(member(m), ": CRC-32 mismatch: the data has ", hex32(crc.checksum()), ", the archive records ",
              hex32(m.crc), " (the file is corrupted)");
  }

  const fs::path& path_;
  detail::InputFile file_;
  std::uint64_t end_offset_ = 0, directory_offset_ = 0, directory_bytes_ = 0;
  std::uint16_t entries_ = 0;
  std::vector<Member> members_;
};

// What save_npz writes for one array.
struct Entry {
  std::string name;    // "<array name>.npy"
  std::string header;  // the .npy header; the tensor's bytes follow it
  const Tensor* tensor = nullptr;
  std::uint16_t flags = 0;
  std::uint32_t crc = 0;  // known once written
  std::uint64_t size = 0, offset = 0;
};

Record local_header(const Entry& e) {
  Record r;
  r.u32(kLocalSignature).u16(kVersionNeeded).u16(e.flags).u16(0).u16(0).u16(kDosDate);
  r.u32(e.crc).u32(e.size).u32(e.size).u16(static_cast<std::uint16_t>(e.name.size())).u16(0).bytes(e.name);
  return r;
}

Record central_header(const Entry& e) {
  Record r;
  r.u32(kCentralSignature).u16(kVersionMadeBy).u16(kVersionNeeded).u16(e.flags).u16(0).u16(0).u16(kDosDate);
  r.u32(e.crc).u32(e.size).u32(e.size).u16(static_cast<std::uint16_t>(e.name.size())).u16(0).u16(0);
  r.u16(0).u16(0).u32(kRegularFileAttributes).u32(e.offset).bytes(e.name);
  return r;
}

}  // namespace

void save_npz(const fs::path& path, const NamedTensors& arrays) {
  if (arrays.size() > kMaxMembers)
    fail<ValueError>("save_npz", "'", path.string(), "': ", arrays.size(),
                     " arrays; an archive without ZIP64 holds at most ", kMaxMembers);
  std::set<std::string_view> seen;
  std::vector<Entry> entries;
  std::uint64_t offset = 0;
  for (std::size_t i = 0; i < arrays.size(); ++i) {
    const auto& [name, t] = arrays[i];
    if (const std::string why = name_problem(name); !why.empty())
      fail<ValueError>("save_npz", "the name of array ", i, " ('", detail::escaped(name), "') ", why);
    if (!seen.insert(name).second) fail<ValueError>("save_npz", "the name '", detail::escaped(name), "' appears twice");
    if (!t.defined())
      fail<ValueError>("save_npz", "array '", detail::escaped(name), "' is undefined (default-constructed)");
    Entry e;
    e.name = name + std::string(kSuffix);
    e.header = detail::npy_header(t);
    e.tensor = &t;
    e.flags = std::all_of(name.begin(), name.end(), [](char c) { return static_cast<unsigned char>(c) < 0x80; })
                  ? 0
                  : kFlagUtf8;
    e.size = e.header.size() + t.nbytes();
    e.offset = offset;
    offset += kLocalBytes + e.name.size() + e.size;
    entries.push_back(std::move(e));
  }
  const std::uint64_t directory_offset = offset;
  const std::uint64_t directory_bytes = std::accumulate(
      entries.begin(), entries.end(), std::uint64_t{0},
      [](std::uint64_t sum, const Entry& e) { return sum + kCentralBytes + e.name.size(); });
  const std::uint64_t total = directory_offset + directory_bytes + kEndBytes;
  if (total > kMaxArchiveBytes)
    fail<ValueError>("save_npz", "'", path.string(), "': the archive would have ", total,
                     " bytes; archives over 4 GiB (ZIP64) are not supported");

  detail::write_atomically(path, "save_npz", [&](detail::FileSink& out) {
    for (Entry& e : entries) {
      boost::crc_32_type crc;
      crc.process_bytes(e.header.data(), e.header.size());
      crc.process_bytes(e.tensor->raw_data(), e.tensor->nbytes());
      e.crc = crc.checksum();
      const Record r = local_header(e);
      out.write(r.str().data(), r.str().size());
      out.write(e.header.data(), e.header.size());
      out.write(e.tensor->raw_data(), e.tensor->nbytes());
    }
    for (const Entry& e : entries) {
      const Record r = central_header(e);
      out.write(r.str().data(), r.str().size());
    }
    const auto n = static_cast<std::uint16_t>(entries.size());
    Record end;
    end.u32(kEndSignature).u16(0).u16(0).u16(n).u16(n).u32(directory_bytes).u32(directory_offset).u16(0);
    out.write(end.str().data(), end.str().size());
  });
}

NamedTensors load_npz(const fs::path& path) { return ArchiveReader(path).read(); }

}  // namespace recur
