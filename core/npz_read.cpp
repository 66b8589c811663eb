// load_npz: libzip parses the archive (end record, ZIP64, central directory, local headers,
// data descriptors, deflate, CRC-32); recur adds what an .npz needs on top: member names
// that are safe array names, only stored or deflated members, sizes that fit the file, the
// .npy bytes themselves, and IOErrors that name the path and the member.
#include <recur/core/npz.hpp>

#include <limits>
#include <memory>
#include <set>
#include <sstream>

#include <zip.h>

#include <recur/core/file_io.hpp>
#include <recur/core/npy_format.hpp>
#include <recur/core/npz_names.hpp>
#include <recur/core/storage.hpp>

namespace recur {
namespace {

namespace fs = std::filesystem;

// Deflate cannot expand data more than about 1032 times; a larger claim is a corrupt size
// (or a bomb), refused before anything is allocated.
constexpr std::uint64_t kMaxDeflateRatio = 1032;

// What a libzip error means for someone loading an .npz.
std::string explain(zip_error_t* error) {
  switch (zip_error_code_zip(error)) {
    case ZIP_ER_NOZIP:
      return "not a ZIP archive, or truncated: no end-of-central-directory record at the end of the file";
    case ZIP_ER_INCONS:
      return "the ZIP structure is inconsistent (truncated or corrupted): the end record, the central directory "
             "and the local headers disagree";
    case ZIP_ER_MULTIDISK:
      return "multi-disk archives are not supported";
    case ZIP_ER_EXISTS:
      return "a member name appears twice in the central directory";
    case ZIP_ER_CRC:
      return "CRC-32 mismatch: the data does not match the checksum the archive records (the file is corrupted)";
    case ZIP_ER_ZLIB:
    case ZIP_ER_COMPRESSED_DATA:
      return "the deflated data is corrupted";
    case ZIP_ER_EOF:
      return "truncated: the data runs past the end of the file";
    default:
      return zip_error_strerror(error);
  }
}

struct ZipCloser {
  void operator()(zip_t* z) const { zip_discard(z); }
};
struct ZipFileCloser {
  void operator()(zip_file_t* f) const { zip_fclose(f); }
};

class ArchiveReader {
 public:
  explicit ArchiveReader(const fs::path& path) : path_(path), file_size_(detail::open_input(path, "load_npz").size) {}

  NamedTensors read() {
    open();
    const zip_int64_t n = zip_get_num_entries(zip_.get(), 0);
    std::set<std::string> names;
    std::vector<zip_stat_t> members;
    for (zip_int64_t i = 0; i < n; ++i) {
      members.push_back(check_member(static_cast<zip_uint64_t>(i)));
      if (!names.insert(members.back().name).second) corrupt(member(members.back()), " appears twice");
    }
    // Every member is held at once (every CRC is checked before any .npy is read): their
    // sizes, up to deflate's ratio times the file, must fit in the memory the system has.
    std::uint64_t total = 0;
    for (const zip_stat_t& m : members)
      if (__builtin_add_overflow(total, m.size, &total)) total = std::numeric_limits<std::uint64_t>::max();
    if (total > memory::available_bytes())
      fail<MemoryError>("load_npz", "'", path_.string(), "': its members hold ", total,
                        " bytes uncompressed, more than the system has free");
    std::vector<std::string> data;
    for (const zip_stat_t& m : members) data.push_back(read_data(m));
    NamedTensors out;
    for (std::size_t i = 0; i < members.size(); ++i) {
      const std::string name = members[i].name;
      detail::NpyOrigin origin{"load_npz", "'"};
      origin.where.append(path_.string()).append("', ").append(member(members[i]));
      std::istringstream in(std::move(data[i]));
      out.emplace_back(name.substr(0, name.size() - detail::kNpzSuffix.size()),
                       detail::read_npy(in, members[i].size, origin, std::nullopt, false));
    }
    return out;
  }

 private:
  template <class... Parts>
  [[noreturn]] void corrupt(const Parts&... parts) const {
    fail<IOError>("load_npz", "'", path_.string(), "': ", parts...);
  }
  static std::string member(const zip_stat_t& m) { return "member '" + detail::escaped(m.name) + "'"; }

  // ZIP_CHECKCONS: libzip also compares every local header with the central directory.
  // It refuses repeated names without saying which; a second, lenient look finds it.
  void open() {
    int code = ZIP_ER_OK;
    std::string why = open_with(ZIP_RDONLY | ZIP_CHECKCONS, code);
    if (zip_) return;
    if (code == ZIP_ER_EXISTS && open_with(ZIP_RDONLY, code).empty()) {
      std::set<std::string> names;
      for (zip_int64_t i = 0; i < zip_get_num_entries(zip_.get(), 0); ++i)
        if (const char* name = zip_get_name(zip_.get(), static_cast<zip_uint64_t>(i), ZIP_FL_ENC_RAW);
            name && !names.insert(name).second)
          corrupt("member '", detail::escaped(name), "' appears twice in the central directory");
    }
    corrupt(why);
  }

  // Opens the archive (zip_ set) or returns why not (and libzip's error code).
  std::string open_with(int flags, int& code) {
    zip_error_t error;
    zip_error_init(&error);
    zip_source_t* source = zip_source_file_create(path_.c_str(), 0, -1, &error);
    if (source) zip_.reset(zip_open_from_source(source, flags, &error));
    if (zip_) return "";
    if (source) zip_source_free(source);
    code = zip_error_code_zip(&error);
    std::string why = explain(&error);
    zip_error_fini(&error);
    return why;
  }

  // The member's metadata, once recur's own rules hold for it. Names stay raw bytes
  // (ZIP_FL_ENC_RAW): numpy writes UTF-8, and names are compared as bytes.
  zip_stat_t check_member(zip_uint64_t index) {
    zip_stat_t m;
    zip_stat_init(&m);
    if (zip_stat_index(zip_.get(), index, ZIP_FL_ENC_RAW, &m) != 0) corrupt("member ", index, ": ", explain(zip_get_error(zip_.get())));
    const zip_uint64_t needed = ZIP_STAT_NAME | ZIP_STAT_SIZE | ZIP_STAT_COMP_SIZE | ZIP_STAT_COMP_METHOD |
                                ZIP_STAT_ENCRYPTION_METHOD;
    if ((m.valid & needed) != needed || !m.name) corrupt("member ", index, ": the central directory entry is incomplete");
    if (m.encryption_method != ZIP_EM_NONE) corrupt(member(m), " is encrypted, which is not supported");
    if (m.comp_method != ZIP_CM_STORE && m.comp_method != ZIP_CM_DEFLATE)
      corrupt(member(m), " uses method ", m.comp_method,
              ": compression is not supported except deflate (method 8, numpy.savez_compressed)");
    if (m.comp_size > file_size_)
      corrupt(member(m), ": its ", m.comp_size, " stored bytes do not fit in the file (", file_size_, " bytes)");
    if (m.comp_method == ZIP_CM_STORE ? m.size != m.comp_size : m.size / kMaxDeflateRatio > m.comp_size)
      corrupt(member(m), " records ", m.comp_size, " compressed and ", m.size, " uncompressed bytes, which ",
              m.comp_method == ZIP_CM_STORE ? "differ for a stored member" : "deflate cannot produce");
    const std::string_view name(m.name);
    if (name.size() < detail::kNpzSuffix.size() || name.substr(name.size() - detail::kNpzSuffix.size()) != detail::kNpzSuffix)
      corrupt(member(m), " is not an array: its name does not end in '.npy'");
    if (const std::string why = detail::npz_name_problem(name.substr(0, name.size() - detail::kNpzSuffix.size()));
        !why.empty())
      corrupt(member(m), ": the array name ", why);
    return m;
  }

  // The member's uncompressed bytes; libzip checks the CRC-32 when the read reaches the end.
  std::string read_data(const zip_stat_t& m) {
    std::unique_ptr<zip_file_t, ZipFileCloser> f(zip_fopen_index(zip_.get(), m.index, 0));
    if (!f) corrupt(member(m), ": ", explain(zip_get_error(zip_.get())));
    std::string data;
    try {
      data.resize(m.size);
    } catch (const std::exception&) {  // std::bad_alloc, or std::length_error past max_size()
      fail<MemoryError>("load_npz", "'", path_.string(), "', ", member(m), ": cannot hold its ", m.size, " bytes");
    }
    std::uint64_t done = 0;
    for (;;) {
      char probe;  // after the data: one more read must find the end (and check the CRC)
      char* at = done < m.size ? data.data() + done : &probe;
      const zip_int64_t got = zip_fread(f.get(), at, done < m.size ? m.size - done : 1);
      if (got < 0) corrupt(member(m), ": ", explain(zip_file_get_error(f.get())));
      if (got == 0) break;
      done += static_cast<std::uint64_t>(got);
      if (done > m.size) corrupt(member(m), ": the data is longer than the ", m.size, " bytes the archive records");
    }
    if (done != m.size)
      corrupt(member(m), ": truncated: ", done, " of the ", m.size, " bytes the archive records");
    return data;
  }

  const fs::path& path_;
  std::uint64_t file_size_;
  std::unique_ptr<zip_t, ZipCloser> zip_;
};

}  // namespace

NamedTensors load_npz(const fs::path& path) { return ArchiveReader(path).read(); }

TensorMap load_npz_map(const fs::path& path) {
  TensorMap out;
  for (auto& [name, t] : load_npz(path)) out.emplace(std::move(name), std::move(t));  // names are unique (checked)
  return out;
}

}  // namespace recur
