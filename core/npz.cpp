#include <recur/core/npz.hpp>

#include <algorithm>
#include <numeric>
#include <set>
#include <string_view>

#include <boost/crc.hpp>

#include <recur/core/file_io.hpp>
#include <recur/core/npy_format.hpp>
#include <recur/core/npz_names.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

// The ZIP records save_npz writes, as laid out in PKWARE's APPNOTE.TXT section 4.3 (the
// reader, core/npz_read.cpp, goes through libzip instead).
constexpr std::uint32_t kLocalSignature = 0x04034b50;
constexpr std::uint32_t kCentralSignature = 0x02014b50;
constexpr std::uint32_t kEndSignature = 0x06054b50;
constexpr std::uint64_t kLocalBytes = 30, kCentralBytes = 46, kEndBytes = 22;
constexpr std::uint16_t kVersionNeeded = 20;             // 2.0, as Python's zipfile writes for stored members
constexpr std::uint16_t kVersionMadeBy = (3 << 8) | 20;  // Unix, 2.0
constexpr std::uint16_t kFlagUtf8 = 0x0800;              // the name is UTF-8
constexpr std::uint16_t kDosDate = (0 << 9) | (1 << 5) | 1;       // 1980-01-01, the earliest DOS date
constexpr std::uint32_t kRegularFileAttributes = 0100644u << 16;  // -rw-r--r-- in the Unix half
constexpr std::uint64_t kMaxArchiveBytes = 0xFFFFFFFF;  // 32-bit offsets and sizes without ZIP64
constexpr std::size_t kMaxMembers = 0xFFFE;             // 0xFFFF in the end record means ZIP64

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
    if (const std::string why = detail::npz_name_problem(name); !why.empty())
      fail<ValueError>("save_npz", "the name of array ", i, " ('", detail::escaped(name), "') ", why);
    if (!seen.insert(name).second) fail<ValueError>("save_npz", "the name '", detail::escaped(name), "' appears twice");
    if (!t.defined())
      fail<ValueError>("save_npz", "array '", detail::escaped(name), "' is undefined (default-constructed)");
    Entry e;
    e.name = name + std::string(detail::kNpzSuffix);
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

void save_npz_map(const fs::path& path, const TensorMap& arrays) {
  save_npz(path, NamedTensors(arrays.begin(), arrays.end()));  // Tensors are handles: no data is copied
}

}  // namespace recur
