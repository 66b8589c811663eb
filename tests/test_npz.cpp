// .npz archives: round trips, files written by numpy.savez (tests/fixtures/make_npz_fixtures.py),
// numpy.savez_compressed and ZIP64 archives, the bytes numpy.load was checked to read, archives
// built here by hand, every truncation and single-byte corruption, and saves that fail part way.
#include <gtest/gtest.h>

#include <boost/crc.hpp>
#include <cmath>
#include <cstring>
#include <set>
#include <string>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_error;
using testing::expect_same;
using testing::FileSizeLimit;
using testing::listing;
using testing::read_bytes;
using testing::same_bytes;
using testing::write_bytes;

namespace fs = std::filesystem;

const fs::path kNpz = fs::path(RECUR_TEST_DATA) / "npz";

// The arrays of RECUR_WRITTEN and NUMPY_SAVEZ in tests/fixtures/make_npz_fixtures.py.
const std::string kGroesse = "gr\xc3\xb6\xc3\x9f" "e";  // "größe" in UTF-8
Tensor w_2x3() { return from_vector<float>({-0.625f, -0.375f, -0.125f, 0.125f, 0.375f, 0.625f}, {2, 3}); }
Tensor lstm_4x2() { return from_vector<float>({0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f}, {4, 2}); }
Tensor idx_5() { return from_vector<std::int64_t>({-2, -1, 0, 1, std::int64_t{1} << 40}, {5}); }
Tensor groesse_2() { return from_vector<double>({1.5, -0.0}, {2}); }

// A ZIP archive assembled here, field by field from APPNOTE.TXT with the constants npz.hpp
// documents (1980-01-01, made by Unix 2.0, -rw-r--r--), to check the writer and to feed
// the reader files recur's writer would never produce.
std::string le(std::uint64_t v, int bytes) {
  std::string s;
  for (int i = 0; i < bytes; ++i) s += static_cast<char>((v >> (8 * i)) & 0xFF);
  return s;
}
std::uint32_t crc32(const std::string& s) {
  boost::crc_32_type c;
  c.process_bytes(s.data(), s.size());
  return c.checksum();
}
std::string local_record(const std::string& name, const std::string& data, std::uint16_t method = 0) {
  return "PK\x03\x04" + le(20, 2) + le(0, 2) + le(method, 2) + le(0, 2) + le(0x21, 2) + le(crc32(data), 4) +
         le(data.size(), 4) + le(data.size(), 4) + le(name.size(), 2) + le(0, 2) + name;
}
std::string central_record(const std::string& name, const std::string& data, std::uint64_t offset,
                           std::uint16_t method = 0) {
  return "PK\x01\x02" + le(0x0314, 2) + le(20, 2) + le(0, 2) + le(method, 2) + le(0, 2) + le(0x21, 2) +
         le(crc32(data), 4) + le(data.size(), 4) + le(data.size(), 4) + le(name.size(), 2) + le(0, 6) + le(0, 2) +
         le(0100644u << 16, 4) + le(offset, 4) + name;
}
std::string end_record(std::size_t n, std::size_t directory_bytes, std::size_t directory_offset) {
  return "PK\x05\x06" + le(0, 4) + le(n, 2) + le(n, 2) + le(directory_bytes, 4) + le(directory_offset, 4) + le(0, 2);
}
std::string zip_of(const std::vector<std::pair<std::string, std::string>>& members) {
  std::string locals, central;
  for (const auto& [name, data] : members) {
    central += central_record(name, data, locals.size());
    locals += local_record(name, data) + data;
  }
  return locals + central + end_record(members.size(), central.size(), locals.size());
}

class Npz : public testing::TempDirTest {
 protected:
  // A tensor's .npy bytes as save_npy writes them (test_npy checks those against numpy.save).
  std::string npy_of(const Tensor& t) const {
    save_npy(file("member.npy"), t);
    return read_bytes(file("member.npy"));
  }
};

TEST_F(Npz, RoundTripsNamesDtypesAndShapesInOrder) {
  const NamedTensors arrays{
      {"z_last_name_first", arange(-3.0, 3.0, 1.0, DType::float64).view({2, 3})},
      {"param/encoder.lstm.weight_ih_l0", tensor({{1.5, -0.0}, {INFINITY, NAN}})},
      {"optim/step", scalar(7, DType::int64)},
      {kGroesse, groesse_2()},
      {"empty", Tensor::empty({2, 0, 3}, DType::float32)},
      {"row", arange(12).view({3, 4})[2]},  // a view saves its own elements only
      {"x", tensor({1e308, -1e-308}, DType::float64)},
  };
  save_npz(file("a.npz"), arrays);
  expect_same(load_npz(file("a.npz")), arrays);
  EXPECT_EQ(to_vector<std::int64_t>(load_npz(file("a.npz"))[5].second), (std::vector<std::int64_t>{8, 9, 10, 11}));
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"a.npz"})) << "a temporary was left behind";
}

TEST_F(Npz, AnEmptyArchiveIsTheOneNumpyWrites) {
  save_npz(file("none.npz"), {});
  EXPECT_EQ(read_bytes(file("none.npz")), read_bytes(kNpz / "numpy_no_arrays.npz"));
  EXPECT_TRUE(load_npz(kNpz / "numpy_no_arrays.npz").empty());
}

TEST_F(Npz, WritesTheBytesNumpyLoadWasCheckedToRead) {
  // recur_written.npz was checked with numpy.load, zipfile.testzip and unzip -t
  // (make_npz_fixtures.py --check); equal arrays must keep giving exactly these bytes.
  save_npz(file("w.npz"), {{"w", w_2x3()},
                           {"param/lstm.weight_ih_l0", lstm_4x2()},
                           {"idx", idx_5()},
                           {"scalar", scalar(-3.25, DType::float64)},
                           {kGroesse, groesse_2()},
                           {"empty", Tensor::empty({2, 0}, DType::float32)}});
  EXPECT_EQ(read_bytes(file("w.npz")), read_bytes(kNpz / "recur_written.npz"));
}

TEST_F(Npz, WritesTheDocumentedRecords) {
  // The archive built field by field here from the layout npz.hpp documents.
  const Tensor a = tensor({1.0, 2.0}, DType::float64), b = scalar(5, DType::int64);
  save_npz(file("two.npz"), {{"a", a}, {"sub/b", b}});
  EXPECT_EQ(read_bytes(file("two.npz")), zip_of({{"a.npy", npy_of(a)}, {"sub/b.npy", npy_of(b)}}));
}

TEST_F(Npz, ReadsWhatNumpySavezWrote) {
  const NamedTensors got = load_npz(kNpz / "numpy_savez.npz");
  expect_same(got, {{"w", w_2x3()},
                    {"b", scalar(-3.25, DType::float64)},
                    {"idx", idx_5()},
                    {"param/lstm.weight_ih_l0", lstm_4x2()},
                    {"empty", zeros({0, 3}, DType::float64)},
                    {kGroesse, groesse_2()}});
  EXPECT_TRUE(std::signbit(got[5].second.at<double>({1})));
}

TEST_F(Npz, ReadsDataDescriptorsCommentsAndZip64LocalSizes) {
  // Written to a stream without seek: flag bit 3, blank local CRC and sizes, data descriptors.
  expect_same(load_npz(kNpz / "numpy_stream.npz"), {{"w", w_2x3()}, {"idx", idx_5()}});
  // An archive comment after the end record.
  expect_same(load_npz(kNpz / "numpy_comment.npz"), {{"w", w_2x3()}});
  // numpy.savez forces a ZIP64 extra field into local headers; older Pythons also put
  // 0xffffffff in the 32-bit sizes, which then come from that field.
  std::string bytes = read_bytes(kNpz / "numpy_savez.npz");
  ASSERT_EQ(bytes.substr(30, 5), "w.npy");
  ASSERT_EQ(bytes.substr(35, 4), le(1, 2) + le(16, 2));  // the ZIP64 extra field of the first member
  bytes.replace(18, 8, std::string(8, '\xff'));
  write_bytes(file("zip64_sizes.npz"), bytes);
  expect_same(load_npz(file("zip64_sizes.npz")), load_npz(kNpz / "numpy_savez.npz"));
  bytes.replace(39, 8, le(999, 8));  // and the field disagrees with the central directory
  write_bytes(file("zip64_wrong.npz"), bytes);
  // libzip (ZIP_CHECKCONS) compares local headers with the central directory.
  expect_error<IOError>([&] { load_npz(file("zip64_wrong.npz")); }, {"zip64_wrong.npz", "disagree"});
}

TEST_F(Npz, ReadsWhatNumpySavezCompressedWrote) {
  expect_same(load_npz(kNpz / "numpy_compressed.npz"), {{"w", w_2x3()}});
  expect_same(load_npz(kNpz / "numpy_compressed_many.npz"), load_npz(kNpz / "numpy_savez.npz"));
}

TEST_F(Npz, ReadsZip64Archives) {
  // ZIP64 sizes and offsets in the central directory, a ZIP64 end record and its locator.
  const std::string bytes = read_bytes(kNpz / "numpy_zip64.npz");
  ASSERT_NE(bytes.find("PK\x06\x06"), std::string::npos);
  ASSERT_NE(bytes.find("PK\x06\x07"), std::string::npos);
  expect_same(load_npz(kNpz / "numpy_zip64.npz"), {{"w", w_2x3()}, {"idx", idx_5()}});
}

TEST_F(Npz, OtherDtypesAreDTypeErrors) {
  const fs::path p = kNpz / "numpy_int32.npz";
  expect_error<DTypeError>([&] { load_npz(p); }, {"recur::load_npz", p.string(), "member 'bad.npy'", "'<i4'"});
}

TEST_F(Npz, BadNamesAndTensorsAreValueErrorsBeforeAnyFileIsTouched) {
  const Tensor t = ones({1});
  const std::pair<std::string, std::string> cases[] = {
      {"", "is empty"},
      {std::string("a\0b", 3), "NUL"},
      {"/abs", "starts or ends with '/'"},
      {"dir/", "starts or ends with '/'"},
      {"a//b", "empty path component"},
      {"..", "'..' path component"},
      {"a/./b", "'.' or '..'"},
      {"a/../../etc", "'..' path component"},
      {std::string(65532, 'n'), "longer than 65531"},
  };
  for (const auto& [name, why] : cases) {
    // An init-capture: Clang 14 cannot capture a structured binding.
    expect_error<ValueError>([&, &name = name] { save_npz(file("bad.npz"), {{"ok", t}, {name, t}}); },
                             {"recur::save_npz", "array 1", why});
  }
  expect_error<ValueError>([&] { save_npz(file("bad.npz"), {{"a", t}, {"b", t}, {"a", t}}); }, {"'a'", "twice"});
  expect_error<ValueError>([&] { save_npz(file("bad.npz"), {{"u", Tensor()}}); }, {"'u'", "undefined"});
  EXPECT_TRUE(listing(dir_).empty());
  // The longest allowed name, and names numpy allows that merely look odd.
  save_npz(file("odd.npz"), {{std::string(65531, 'n'), t}, {"a b/c\\d.e", t}, {"...", t}});
  EXPECT_EQ(load_npz(file("odd.npz"))[1].first, "a b/c\\d.e");
}

TEST_F(Npz, ArchivesOver4GiBOr65534MembersAreRefusedBeforeWriting) {
  // 2 x 2 GiB of untouched (never paged-in) memory.
  const Tensor big = Tensor::empty({std::int64_t{1} << 28}, DType::float64);
  expect_error<ValueError>([&] { save_npz(file("big.npz"), {{"a", big}, {"b", big}}); },
                           {"recur::save_npz", "4 GiB", "ZIP64"});
  NamedTensors many;
  const Tensor t = scalar(1.0);
  for (int i = 0; i < 65535; ++i) many.emplace_back(std::string("a").append(std::to_string(i)), t);
  expect_error<ValueError>([&] { save_npz(file("many.npz"), many); }, {"65535 arrays", "at most 65534"});
  EXPECT_TRUE(listing(dir_).empty());
}

TEST_F(Npz, HandBuiltArchivesAreReadAndCheckedMemberByMember) {
  const std::string a = npy_of(tensor({1.0, 2.0}, DType::float64)), b = npy_of(scalar(5, DType::int64));
  write_bytes(file("ok.npz"), zip_of({{"a.npy", a}, {"sub/b.npy", b}}));
  expect_same(load_npz(file("ok.npz")),
              {{"a", tensor({1.0, 2.0}, DType::float64)}, {"sub/b", scalar(5, DType::int64)}});

  const std::pair<std::string, std::vector<std::string>> cases[] = {
      {zip_of({{"a.npy", a + "xyz"}}), {"member 'a.npy'", "3 unexpected bytes after the 16 bytes of data"}},
      {zip_of({{"a.txt", a}}), {"member 'a.txt'", "does not end in '.npy'"}},
      {zip_of({{"../a.npy", a}}), {"member '../a.npy'", "'..' path component"}},
      {zip_of({{"a.npy", a}, {"a.npy", b}}), {"member 'a.npy'", "appears twice"}},
      {zip_of({{".npy", a}}), {"member '.npy'", "is empty"}},
      {zip_of({{"a.npy", "\x93NUMPY\x01"}}), {"member 'a.npy'", "truncated header"}},
      {zip_of({{"a.npy", a.substr(0, 130)}}), {"member 'a.npy'", "truncated data", "expected 16 bytes", "found 2"}},
  };
  for (const auto& [bytes, mentions] : cases) {
    write_bytes(file("bad.npz"), bytes);
    try {
      load_npz(file("bad.npz"));
      ADD_FAILURE() << "no exception for " << mentions[0];
    } catch (const IOError& e) {
      for (const auto& m : mentions) EXPECT_NE(std::string(e.what()).find(m), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(file("bad.npz").string()), std::string::npos) << e.what();
    }
  }
}

TEST_F(Npz, InconsistentZipStructuresAreIOErrors) {
  const std::string a = npy_of(tensor({1.0, 2.0}, DType::float64)), b = npy_of(scalar(5, DType::int64));
  const std::string la = local_record("a.npy", a), lb = local_record("b.npy", b);
  // Member b's local record hidden inside a's data: both pass their CRC, but they overlap.
  const std::string a_holding_b = a + lb + b;
  const std::string locals = local_record("a.npy", a_holding_b) + a_holding_b;
  const std::string central = central_record("a.npy", a_holding_b, 0) +
                              central_record("b.npy", b, la.size() + a.size());
  write_bytes(file("overlap.npz"), locals + central + end_record(2, central.size(), locals.size()));
  // libzip does not look for overlaps; the .npy check finds b's record inside a's data.
  expect_error<IOError>([&] { load_npz(file("overlap.npz")); }, {"member 'a.npy'", "unexpected bytes"});

  // Methods other than stored and deflate (bzip2 here) are refused by recur, AES (99) by libzip.
  const auto with_method = [&](std::uint16_t method) {
    const std::string l = local_record("a.npy", a, method), c = central_record("a.npy", a, 0, method);
    write_bytes(file("method.npz"), l + a + c + end_record(1, c.size(), l.size() + a.size()));
  };
  with_method(12);
  expect_error<IOError>([&] { load_npz(file("method.npz")); },
                        {"member 'a.npy'", "method 12", "compression is not supported"});
  with_method(99);
  expect_error<IOError>([&] { load_npz(file("method.npz")); }, {"method.npz", "inconsistent"});
  // Plain bytes marked as deflated do not inflate to what the CRC-32 records.
  with_method(8);
  expect_error<IOError>([&] { load_npz(file("method.npz")); }, {"member 'a.npy'", "CRC-32 mismatch"});

  // Bytes between the data and the central directory shift every offset the end record states.
  const std::string ca = central_record("a.npy", a, 0);
  write_bytes(file("gap.npz"), la + a + "gap" + ca + end_record(1, ca.size(), la.size() + a.size()));
  expect_error<IOError>([&] { load_npz(file("gap.npz")); }, {"gap.npz", "no end-of-central-directory record"});
  // Junk after the end record that is not its comment.
  write_bytes(file("junk.npz"), zip_of({{"a.npy", a}}) + "junk");
  expect_error<IOError>([&] { load_npz(file("junk.npz")); }, {"junk.npz", "inconsistent"});
  // Two disks; ZIP64 markers without the ZIP64 end record they point to.
  std::string z = zip_of({{"a.npy", a}});
  const std::size_t end = z.size() - 22;
  std::string disks = z;
  disks.replace(end + 4, 2, le(1, 2));
  write_bytes(file("disks.npz"), disks);
  expect_error<IOError>([&] { load_npz(file("disks.npz")); }, {"multi-disk"});
  std::string zip64 = z;
  zip64.replace(end + 8, 4, le(0xFFFF, 2) + le(0xFFFF, 2));
  write_bytes(file("zip64.npz"), zip64);
  expect_error<IOError>([&] { load_npz(file("zip64.npz")); }, {"zip64.npz", "inconsistent"});
  std::string encrypted = z;
  encrypted[6] = encrypted[end - 46 - 5 + 8] = '\x01';  // flags of the local and central records
  write_bytes(file("encrypted.npz"), encrypted);
  expect_error<IOError>([&] { load_npz(file("encrypted.npz")); }, {"member 'a.npy'", "encrypted"});
}

TEST_F(Npz, MissingFilesAndDirectoriesAreIOErrors) {
  expect_error<IOError>([&] { load_npz(file("nope.npz")); }, {"recur::load_npz", "nope.npz", "no such file"});
  expect_error<IOError>([&] { load_npz(dir_); }, {"not a regular file"});
  write_bytes(file("text.npz"), "hello, this is not a zip archive at all");
  expect_error<IOError>([&] { load_npz(file("text.npz")); }, {"text.npz", "not a ZIP archive"});
  expect_error<IOError>([&] { save_npz(dir_ / "missing_dir" / "x.npz", {{"a", ones({1})}}); },
                        {"recur::save_npz", "missing_dir", "cannot create the temporary file"});
}

// A two-member archive and where its fields lie, for the corruption tests.
struct SmallArchive {
  NamedTensors arrays{{"a", tensor({1.0f, 2.0f})}, {"bb", scalar(7, DType::int64)}};
  std::string bytes;
  std::vector<std::pair<std::size_t, std::size_t>> data;  // [begin, end) of each member's .npy bytes
  std::set<std::size_t> ignored;                          // bytes the reader does not rely on
};

TEST_F(Npz, TruncationAtEveryLengthIsAnIOError) {
  SmallArchive s;
  save_npz(file("good.npz"), s.arrays);
  const std::string good = read_bytes(file("good.npz"));
  const fs::path p = file("cut.npz");
  for (std::size_t n = 0; n < good.size(); ++n) {
    write_bytes(p, good.substr(0, n));
    expect_error<IOError>([&] { load_npz(p); }, {"recur::load_npz", p.string()});
  }
}

TEST_F(Npz, EverySingleByteCorruptionIsCaughtUnlessTheByteIsUnused) {
  SmallArchive s;
  save_npz(file("good.npz"), s.arrays);
  const std::string good = read_bytes(file("good.npz"));
  // Lay the archive out from the .npy sizes alone: local record (30 bytes + name) and data
  // per member, then the central records (46 bytes + name), then the 22-byte end record.
  std::size_t at = 0;
  std::vector<std::size_t> local_at;
  for (const auto& [name, t] : s.arrays) {
    local_at.push_back(at);
    const std::size_t begin = at + 30 + name.size() + 4;
    s.data.emplace_back(begin, begin + npy_of(t).size());
    at = s.data.back().second;
  }
  for (std::size_t i = 0; i < s.arrays.size(); ++i) {
    // What libzip does not rely on. Local: the flags (6-7; libzip trusts the central
    // directory's, as some writers disagree). Central: version made by and needed (4-7;
    // a local "version needed" above the central one is caught), the flags' high byte (9;
    // UTF-8 and reserved bits, recur compares names as bytes), the start disk (34-35) and
    // the internal and external attributes (36-41). Times and dates are compared.
    for (std::size_t o : {6, 7}) s.ignored.insert(local_at[i] + o);
    for (std::size_t o : {4, 5, 6, 7, 9, 34, 35, 36, 37, 38, 39, 40, 41}) s.ignored.insert(at + o);
    at += 46 + s.arrays[i].first.size() + 4;
  }
  ASSERT_EQ(at + 22, good.size());

  const fs::path p = file("flipped.npz");
  std::set<std::size_t> loaded;
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(~bad[i]);
    write_bytes(p, bad);
    const bool in_data =
        std::any_of(s.data.begin(), s.data.end(), [&](auto r) { return i >= r.first && i < r.second; });
    try {
      const NamedTensors got = load_npz(p);
      loaded.insert(i);
      expect_same(got, s.arrays);
    } catch (const IOError& e) {
      const std::string msg = e.what();
      EXPECT_NE(msg.find(p.string()), std::string::npos) << msg;
      if (in_data) {
        EXPECT_NE(msg.find("CRC-32 mismatch"), std::string::npos) << "byte " << i << ": " << msg;
      }
    } catch (const std::exception& e) {
      ADD_FAILURE() << "byte " << i << ": not an IOError: " << e.what();
    }
  }
  EXPECT_EQ(loaded, s.ignored);
}

TEST_F(Npz, AFailedSaveKeepsTheOldFileAndLeavesNoTemporary) {
  const NamedTensors old_arrays{{"a", ones({4})}};
  save_npz(file("keep.npz"), old_arrays);
  const std::string old_bytes = read_bytes(file("keep.npz"));
  const NamedTensors big{{"a", zeros({100000})}};  // 400 kB
  {
    const FileSizeLimit limit(4096);  // the write fails part way
    expect_error<IOError>([&] { save_npz(file("keep.npz"), big); },
                          {"recur::save_npz", file("keep.npz").string(), "File too large"});
  }
  EXPECT_EQ(read_bytes(file("keep.npz")), old_bytes);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"keep.npz"}));
  expect_same(load_npz(file("keep.npz")), old_arrays);

  // The rename fails: the target is a directory.
  fs::create_directories(file("target.npz") / "inside");
  expect_error<IOError>([&] { save_npz(file("target.npz"), old_arrays); },
                        {"recur::save_npz", "renaming the temporary file", "unchanged"});
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"keep.npz", "target.npz"}));
  EXPECT_EQ(listing(file("target.npz")), (std::vector<std::string>{"inside"}));

  // A new save replaces the file whole.
  save_npz(file("keep.npz"), big);
  expect_same(load_npz(file("keep.npz")), big);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"keep.npz", "target.npz"}));
}

}  // namespace
}  // namespace recur
