// .npy files: round trips, byte-exact agreement with numpy.save (reference files written by
// tests/data/make_npy_reference.py), and every kind of broken file throwing the right error.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <unistd.h>

#include <recur/recur.hpp>

#include "expect_error.hpp"

namespace recur {
namespace {

using testing::expect_clean_failure;
using testing::expect_error;

namespace fs = std::filesystem;

const fs::path kData = RECUR_TEST_DATA;

std::string read_bytes(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
void write_bytes(const fs::path& p, const std::string& bytes) {
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// A .npy file around `dict`, padded as numpy pads (spaces and '\n' to a multiple of 64)
// unless `pad` is false; version 1 has a 2-byte header length, 2 and 3 a 4-byte one.
std::string npy_bytes(const std::string& dict, const std::string& data, int version = 1, bool pad = true) {
  const std::size_t prefix = version == 1 ? 10 : 12;
  std::string header = dict;
  if (pad) header.append(63 - (prefix + dict.size()) % 64, ' ');
  header += '\n';
  std::string out = "\x93NUMPY";
  out += static_cast<char>(version);
  out += '\0';
  for (std::size_t b = 0; b < prefix - 8; ++b) out += static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  return out + header + data;
}

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string s(values.size() * sizeof(T), '\0');
  std::memcpy(s.data(), values.begin(), s.size());
  return s;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}


class Npy : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("recur_npy_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path file(const std::string& name) const { return dir_ / name; }

  fs::path dir_;
};

TEST_F(Npy, RoundTripsEveryDtypeAndShape) {
  const Shape shapes[] = {{}, {0}, {1}, {7}, {2, 3}, {2, 0, 4}, {1, 1, 1, 5}, {2, 3, 4, 5}};
  for (DType dtype : {DType::float32, DType::float64, DType::int64})
    for (const Shape& shape : shapes) {
      const Tensor x = arange(-2.5, static_cast<double>(numel(shape)) - 2.5, 1.0, dtype).view(shape);
      const fs::path p = file("t.npy");
      save_npy(p, x);
      const Tensor y = load_npy(p);
      EXPECT_TRUE(same_bytes(x, y)) << name_of(dtype) << " " << to_string(shape);
      EXPECT_EQ(read_bytes(p).size() % 64, x.nbytes() % 64) << "data not 64-byte aligned";
    }
}

TEST_F(Npy, RoundTripsSpecialValuesAndViews) {
  const Tensor a = tensor({{1.0 / 3, -0.0, 1e308}, {INFINITY, -INFINITY, NAN}}, DType::float64);
  save_npy(file("a.npy"), a);
  EXPECT_TRUE(same_bytes(a, load_npy(file("a.npy"))));
  // A view starting inside its buffer saves its own elements only.
  const Tensor row = arange(12).view({3, 4})[2];
  save_npy(file("row.npy"), row);
  EXPECT_EQ(to_vector<std::int64_t>(load_npy(file("row.npy"))), (std::vector<std::int64_t>{8, 9, 10, 11}));
}

TEST_F(Npy, ReadsFilesWrittenByNumpy) {
  const Tensor a = load_npy(kData / "ref_f32_2x3.npy");
  EXPECT_EQ(a.dtype(), DType::float32);
  EXPECT_EQ(a.shape(), (Shape{2, 3}));
  EXPECT_EQ(to_vector<float>(a), (std::vector<float>{-0.625f, -0.375f, -0.125f, 0.125f, 0.375f, 0.625f}));

  const Tensor s = load_npy(kData / "ref_f64_0d.npy");
  EXPECT_EQ(s.dtype(), DType::float64);
  EXPECT_EQ(s.rank(), 0);
  EXPECT_EQ(s.item(), -3.25);

  const Tensor i = load_npy(kData / "ref_i64_5.npy");
  EXPECT_EQ(i.dtype(), DType::int64);
  EXPECT_EQ(to_vector<std::int64_t>(i), (std::vector<std::int64_t>{-2, -1, 0, 1, std::int64_t{1} << 40}));

  const Tensor e = load_npy(kData / "ref_f64_0x3.npy");
  EXPECT_EQ(e.dtype(), DType::float64);
  EXPECT_EQ(e.shape(), (Shape{0, 3}));

  const Tensor r15 = load_npy(kData / "ref_f64_rank15.npy");
  EXPECT_EQ(r15.rank(), 15);
  EXPECT_EQ(r15.size(-1), 3);
  EXPECT_EQ(to_vector<double>(r15), (std::vector<double>{0.0, 1.0, 2.0}));

  const Tensor r3 = load_npy(kData / "ref_f32_2x1x2.npy");
  EXPECT_EQ(r3.shape(), (Shape{2, 1, 2}));
  EXPECT_TRUE(std::signbit(r3.at<float>({0, 0, 1})));
  EXPECT_EQ(r3.at<float>({1, 0, 0}), INFINITY);
}

TEST_F(Npy, WritesTheBytesNumpyWrites) {
  for (const char* name : {"ref_f32_2x3.npy", "ref_f64_0d.npy", "ref_i64_5.npy", "ref_f64_0x3.npy", "ref_f32_2x1x2.npy",
                           "ref_f64_rank15.npy"}) {
    save_npy(file("copy.npy"), load_npy(kData / name));
    EXPECT_EQ(read_bytes(file("copy.npy")), read_bytes(kData / name)) << name;
  }
}

TEST_F(Npy, MatchesAHandWrittenHeader) {
  // Exactly what numpy.save writes for np.array([1.5, -2.0]): the dict, 20 spaces of room to
  // grow axis 0 (21 digits minus the one of "2"), padding to 64 bytes, '\n', the data.
  std::string expected = std::string("\x93NUMPY\x01\x00\x76\x00", 10);
  expected += "{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }";
  expected.append(128 - 1 - expected.size(), ' ');
  expected += '\n';
  expected += raw<double>({1.5, -2.0});
  const Tensor t = tensor({1.5, -2.0}, DType::float64);
  save_npy(file("hand.npy"), t);
  EXPECT_EQ(read_bytes(file("hand.npy")), expected);
  write_bytes(file("hand2.npy"), expected);
  EXPECT_TRUE(same_bytes(load_npy(file("hand2.npy")), t));
}

TEST_F(Npy, AcceptsOtherValidHeaders) {
  const std::string data = raw<std::int64_t>({4, 5, 6});
  const Tensor want = from_vector<std::int64_t>({4, 5, 6}, {3});
  const std::string dicts[] = {
      "{'shape': (3,), 'descr': '<i8', 'fortran_order': False}",            // other key order, no ','
      "{\"descr\": \"<i8\", \"fortran_order\": False, \"shape\": (3, ), }",  // double quotes, spaces
      "{'descr':'<i8','fortran_order':True,'shape':(3,)}",                   // 1-d Fortran = C order
  };
  for (const auto& d : dicts)
    for (bool pad : {true, false}) {
      write_bytes(file("ok.npy"), npy_bytes(d, data, 1, pad));
      EXPECT_TRUE(same_bytes(load_npy(file("ok.npy")), want)) << d;
    }
  for (int version : {2, 3}) {
    write_bytes(file("v.npy"), npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", data, version));
    EXPECT_TRUE(same_bytes(load_npy(file("v.npy")), want)) << "version " << version;
  }
  // Trailing bytes after the data are ignored, as numpy.load ignores them.
  write_bytes(file("tail.npy"), npy_bytes("{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", data + "xyz"));
  EXPECT_TRUE(same_bytes(load_npy(file("tail.npy")), want));
}

TEST_F(Npy, TruncationAtEveryLengthIsAnIOError) {
  const std::string good = read_bytes(kData / "ref_f32_2x3.npy");
  const std::size_t data_start = good.size() - 24;
  ASSERT_EQ(data_start, 128u);
  for (std::size_t n = 0; n < good.size(); ++n) {
    const fs::path p = file("cut_" + std::to_string(n) + ".npy");
    write_bytes(p, good.substr(0, n));
    if (n >= data_start)
      expect_error<IOError>([&] { load_npy(p); }, {"recur::load_npy", p.string(), "truncated data", "expected 24 bytes",
                                                   "found " + std::to_string(n - data_start)});
    else if (n >= 10)
      expect_error<IOError>([&] { load_npy(p); }, {p.string(), "truncated header", "expected 118 bytes",
                                                   "found " + std::to_string(n - 10)});
    else
      expect_error<IOError>([&] { load_npy(p); }, {p.string(), "truncated header", "found " + std::to_string(n)});
  }
}

TEST_F(Npy, WrongMagicIsAnIOError) {
  std::string bad = read_bytes(kData / "ref_f32_2x3.npy");
  bad[1] = 'X';
  write_bytes(file("magic.npy"), bad);
  expect_error<IOError>([&] { load_npy(file("magic.npy")); }, {"magic", "\\x93NUMPY", "\\x93XUMPY"});
  write_bytes(file("text.npy"), "hello, world\n");
  expect_error<IOError>([&] { load_npy(file("text.npy")); }, {"text.npy", "magic", "hello"});
  write_bytes(file("short.npy"), "\x93NU");  // a correct but short start is a truncation
  expect_error<IOError>([&] { load_npy(file("short.npy")); }, {"truncated header", "found 3"});
}

TEST_F(Npy, UnsupportedDtypesAreDTypeErrors) {
  expect_error<DTypeError>([&] { load_npy(kData / "ref_i4_3.npy"); }, {"ref_i4_3.npy", "'<i4'"});
  expect_error<DTypeError>([&] { load_npy(kData / "ref_f8_big_endian_2.npy"); }, {"'>f8'"});
  expect_error<DTypeError>([&] { load_npy(kData / "ref_f4_fortran_2x3.npy"); }, {"'<f4'", "fortran_order", "[2, 3]"});
  write_bytes(file("bool.npy"), npy_bytes("{'descr': '|b1', 'fortran_order': False, 'shape': (1,), }", "\x01"));
  expect_error<DTypeError>([&] { load_npy(file("bool.npy")); }, {"'|b1'"});
  write_bytes(file("rec.npy"), npy_bytes("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }",
                                         raw<float>({1.0f})));
  expect_error<DTypeError>([&] { load_npy(file("rec.npy")); }, {"[('a', '<f4')]", "structured"});
}

TEST_F(Npy, ExpectedDtypeIsChecked) {
  const fs::path p = kData / "ref_f32_2x3.npy";
  EXPECT_EQ(load_npy(p, DType::float32).dtype(), DType::float32);
  expect_error<DTypeError>([&] { load_npy(p, DType::float64); }, {"ref_f32_2x3.npy", "float32", "'<f4'", "expected float64"});
  expect_error<DTypeError>([&] { load_npy(kData / "ref_i64_5.npy", DType::float32); }, {"int64", "float32"});
}

TEST_F(Npy, MalformedHeadersAreIOErrors) {
  const std::string data = raw<double>({1.0, 2.0});
  const std::pair<std::string, std::string> cases[] = {
      {"{'descr': '<f8', 'fortran_order': False}", "'shape'"},                                   // missing key
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,), 'extra': 1}", "'extra'"},         // unknown key
      {"{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (2,)}", "each once"},  // duplicate
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2)}", "1-tuple"},                     // an int, not a tuple
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (-2,)}", "non-negative"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (two,)}", "dimension"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999999999999,)}", "below 2^63"},
      {"{'descr': '<f8', 'fortran_order': false, 'shape': (2,)}", "True or False"},
      {"{'descr': '<f8, 'fortran_order': False, 'shape': (2,)}", "',' or '}'"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)} junk", "end of the header"},
      {"{'descr': '<f8', 'fortran_order': False, 'shape': (2,)", "',' or '}'"},
      {"['<f8', False, (2,)]", "'{'"},
      {"", "'{'"},
  };
  for (const auto& [dict, mention] : cases) {
    write_bytes(file("bad.npy"), npy_bytes(dict, data));
    expect_error<IOError>([&] { load_npy(file("bad.npy")); }, {"bad.npy", "malformed header", mention});
  }
}

TEST_F(Npy, ImpossibleSizesAreIOErrorsWithoutAllocating) {
  write_bytes(file("huge.npy"), npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", ""));
  expect_error<IOError>([&] { load_npy(file("huge.npy")); }, {"too large"});
  write_bytes(file("big.npy"), npy_bytes("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }", "12345678"));
  expect_error<IOError>([&] { load_npy(file("big.npy")); }, {"truncated data", "expected 8000000000000 bytes", "found 8"});
  // A header length pointing past the end of the file.
  std::string lying = read_bytes(kData / "ref_f32_2x3.npy");
  lying[8] = '\xff';
  lying[9] = '\xff';
  write_bytes(file("lying.npy"), lying);
  expect_error<IOError>([&] { load_npy(file("lying.npy")); }, {"truncated header", "expected 65535 bytes", "found 142"});
  std::string v4 = read_bytes(kData / "ref_f32_2x3.npy");
  v4[6] = '\x04';
  write_bytes(file("v4.npy"), v4);
  expect_error<IOError>([&] { load_npy(file("v4.npy")); }, {"version 4.0"});
}

TEST_F(Npy, EverySingleByteCorruptionLoadsOrThrowsARecurError) {
  // Run under ASan in CI: no corruption of the preamble or header may read out of bounds.
  const std::string good = read_bytes(kData / "ref_f32_2x3.npy");
  const fs::path p = file("mutant.npy");
  int loaded = 0;
  for (std::size_t i = 0; i < 128; ++i)
    for (char c : {'\0', '\xff', ' ', ',', '9', '\''}) {
      if (good[i] == c || (i > 80 && i < 120)) continue;  // skip the middle of the padding
      std::string bad = good;
      bad[i] = c;
      write_bytes(p, bad);
      try {
        const Tensor t = load_npy(p);
        EXPECT_LE(t.nbytes(), 24u) << "byte " << i;
        ++loaded;
      } catch (const IOError&) {
      } catch (const DTypeError&) {
      } catch (const std::exception& e) {
        ADD_FAILURE() << "byte " << i << " -> '" << c << "': unexpected " << e.what();
      }
    }
  EXPECT_GT(loaded, 0);  // changes inside the padding are harmless
}

TEST_F(Npy, MissingFilesAndWriteFailures) {
  expect_error<IOError>([&] { load_npy(file("nope.npy")); }, {"recur::load_npy", "nope.npy", "no such file"});
  expect_error<IOError>([&] { load_npy(dir_); }, {"not a regular file"});
  expect_error<IOError>([&] { save_npy(dir_ / "missing_dir" / "x.npy", ones({2})); }, {"recur::save_npy", "missing_dir"});
  expect_error<ValueError>([&] { save_npy(file("u.npy"), Tensor()); }, {"recur::save_npy", "undefined"});
}

}  // namespace
}  // namespace recur
