// safetensors files (core/safetensors.hpp): round trips of every dtype with metadata, the
// bytes recur writes (checked by tests/fixtures/make_safetensors_fixtures.py --check), the
// files that script wrote from the published format (F16 and BF16 widened to the float32
// values it computed), every malformed file it wrote refused with the error naming the
// problem, truncations and corruptions, refused and failed saves; and modules saved and
// loaded through them (autodiff/module_io.hpp) with the options and errors of .npz.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <numbers>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"
#include "values.hpp"

namespace recur {
namespace {

namespace fs = std::filesystem;
using testing::expect_error;
using testing::expect_same;
using testing::read_bytes;
using testing::same_bytes;
using testing::write_bytes;

const fs::path kData = fs::path(RECUR_TEST_DATA) / "safetensors";
const std::string kGroesse = "gr\xc3\xb6\xc3\x9f" "e";  // "größe" in UTF-8

// RECUR_WRITTEN and RECUR_WRITTEN_METADATA of make_safetensors_fixtures.py.
NamedTensors recur_written() {
  return {{"w", from_vector<float>({-0.625f, -0.375f, -0.125f, 0.125f, 0.375f, 0.625f}, {2, 3})},
          {"param/lstm.weight_ih_l0", from_vector<float>({0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f}, {4, 2})},
          {"idx", from_vector<std::int64_t>({-2, -1, 0, 1, std::int64_t{1} << 40, std::int64_t{1} << 62}, {6})},
          {"scalar", from_vector<double>({-3.25}, {})},
          {kGroesse, from_vector<double>({1.5, -0.0}, {2})},
          {"empty", zeros({2, 0})}};
}
const SafetensorsMetadata kRecurWrittenMetadata{{"format", "pt"}, {"source", "recur"}};

// The bits of each float32 element: exact comparisons, -0 and NaN payloads included.
std::vector<std::uint32_t> bits_of(const Tensor& t) {
  std::vector<std::uint32_t> out;
  for (float f : to_vector<float>(t)) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}
std::vector<std::uint32_t> bits_of(const std::vector<float>& v) {
  std::vector<std::uint32_t> out;
  for (float f : v) out.push_back(std::bit_cast<std::uint32_t>(f));
  return out;
}

using SafetensorsFile = testing::TempDirTest;

TEST_F(SafetensorsFile, RoundTripsEveryDtypeInOrderWithMetadata) {
  const NamedTensors tensors = recur_written();
  save_safetensors(file("a.safetensors"), tensors, kRecurWrittenMetadata);
  const Safetensors got = load_safetensors(file("a.safetensors"));
  expect_same(got.tensors, tensors);
  EXPECT_EQ(got.metadata, kRecurWrittenMetadata);

  // Without metadata, none comes back; the map writes and reads by name.
  save_safetensors_map(file("m.safetensors"), TensorMap(tensors.begin(), tensors.end()));
  const SafetensorsMap map = load_safetensors_map(file("m.safetensors"));
  EXPECT_TRUE(map.metadata.empty());
  ASSERT_EQ(map.tensors.size(), tensors.size());
  for (const auto& [name, t] : tensors) EXPECT_TRUE(same_bytes(map.tensors.at(name), t)) << name;
  std::vector<std::string> names;
  for (const auto& [name, t] : load_safetensors(file("m.safetensors")).tensors) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"empty", "gr\xc3\xb6\xc3\x9f" "e", "idx", "param/lstm.weight_ih_l0",
                                             "scalar", "w"}));

  // No tensor at all.
  save_safetensors(file("none.safetensors"), {}, {{"k", "v"}});
  const Safetensors none = load_safetensors(file("none.safetensors"));
  EXPECT_TRUE(none.tensors.empty());
  EXPECT_EQ(none.metadata, (SafetensorsMetadata{{"k", "v"}}));
}

TEST_F(SafetensorsFile, WritesTheBytesTheFormatCheckWasRunOn) {
  // make_safetensors_fixtures.py --check: the format's rules and every value, read back.
  save_safetensors(file("recur.safetensors"), recur_written(), kRecurWrittenMetadata);
  EXPECT_EQ(read_bytes(file("recur.safetensors")), read_bytes(kData / "recur_written.safetensors"));
}

TEST_F(SafetensorsFile, WritesTheDocumentedLayout) {
  // Length, compact JSON (metadata first, keys dtype, shape, data_offsets), spaces to a
  // multiple of 8, then the data in the order given.
  save_safetensors(file("x.safetensors"), {{"b", tensor({0.5, -1.0}, DType::float64)}, {"a", scalar(7, DType::int64)}},
                   {{"k", "v\"\n"}});
  std::string header =
      R"({"__metadata__":{"k":"v\"\n"},"b":{"dtype":"F64","shape":[2],"data_offsets":[0,16]},)"
      R"("a":{"dtype":"I64","shape":[],"data_offsets":[16,24]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string want;
  for (int b = 0; b < 8; ++b) want += static_cast<char>((header.size() >> (8 * b)) & 0xFF);
  want += header;
  const double b[] = {0.5, -1.0};
  const std::int64_t a = 7;
  want.append(reinterpret_cast<const char*>(b), sizeof b).append(reinterpret_cast<const char*>(&a), sizeof a);
  EXPECT_EQ(read_bytes(file("x.safetensors")), want);
}

TEST_F(SafetensorsFile, ReadsTheFilesWrittenFromTheFormat) {
  // The header lists "b" first; the data holds "w" first, and load gives file order.
  expect_same(load_safetensors(kData / "f32.safetensors").tensors,
              {{"w", from_vector<float>({-0.625f, -0.375f, -0.125f, 0.125f, 0.375f, 0.625f}, {2, 3})},
               {"b", tensor({0.5f, -1.0f, 2.0f})}});
  expect_same(load_safetensors(kData / "f64.safetensors").tensors,
              {{"x", from_vector<double>({std::numbers::pi, -0.0, 1e300, -2.5e-310}, {2, 2})}});
  expect_same(load_safetensors(kData / "i64.safetensors").tensors,
              {{"idx", from_vector<std::int64_t>({-2, -1, 0, 1, std::int64_t{1} << 40, std::int64_t{1} << 62}, {6})}});
  expect_same(load_safetensors(kData / "scalar.safetensors").tensors,
              {{"s", from_vector<double>({-3.25}, {})}, {"n", from_vector<std::int64_t>({7}, {})}});
  expect_same(load_safetensors(kData / "zero_size.safetensors").tensors,
              {{"e", zeros({0, 3})}, {"z", zeros({2, 0}, DType::float64)}, {"x", tensor({1.5f})}});
  const Safetensors meta = load_safetensors(kData / "metadata.safetensors");
  EXPECT_EQ(meta.metadata, (SafetensorsMetadata{{"format", "pt"}, {"note", kGroesse + " \xe2\x9c\x93"}}));
  expect_same(meta.tensors, {{"w", tensor({1.0f, 2.0f})}});
  const Safetensors empty = load_safetensors(kData / "empty.safetensors");
  EXPECT_TRUE(empty.tensors.empty() && empty.metadata.empty());
}

TEST_F(SafetensorsFile, F16IsWidenedToTheFloat32ValuesTheScriptComputed) {
  expect_error<DTypeError>([] { load_safetensors(kData / "f16.safetensors"); },
                           {"recur::load_safetensors", "f16.safetensors", "tensor 'h'", "F16",
                            "convert_half_to_float32"});
  const Safetensors got = load_safetensors(kData / "f16.safetensors", {.convert_half_to_float32 = true});
  ASSERT_EQ(got.tensors.size(), 2u);
  const Tensor& h = got.tensors[0].second;
  EXPECT_EQ(got.tensors[0].first, "h");
  EXPECT_EQ(h.dtype(), DType::float32);
  EXPECT_EQ(h.shape(), (Shape{12}));
  // numpy's float16 -> float32 of 1, -2.5, the largest half, the smallest and largest
  // subnormals, the smallest normal, -0, +-inf, then 0.1 and 1/3 as halves; NaN apart.
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::uint32_t> want = bits_of({1.0f, -2.5f, 65504.0f, 0x1p-24f, 0x3FFp-24f, 0x1p-14f, -0.0f, inf, -inf,
                                             0.0f, 0.0999755859375f, 0.333251953125f});
  want[9] = 0x7FC00000;  // half 0x7E00, the quiet NaN: payload bits carried over
  EXPECT_EQ(bits_of(h), want);
  EXPECT_TRUE(std::isnan(h.at<float>({9})));
  expect_same({got.tensors[1]}, {{"m", from_vector<float>({1, 2, 3, 4}, {2, 2})}});
}

TEST_F(SafetensorsFile, BF16IsWidenedToTheFloat32ValuesTheScriptComputed) {
  expect_error<DTypeError>([] { load_safetensors(kData / "bf16.safetensors"); },
                           {"recur::load_safetensors", "tensor 'g'", "BF16", "convert_half_to_float32"});
  const Safetensors got = load_safetensors(kData / "bf16.safetensors", {.convert_half_to_float32 = true});
  ASSERT_EQ(got.tensors.size(), 1u);
  const Tensor& g = got.tensors[0].second;
  EXPECT_EQ(g.shape(), (Shape{11}));
  // The script's bfloat16 of 1, -2.5, 0.1, pi, the largest bfloat16, the smallest
  // subnormal, -0, +-inf, NaN, -1e-39 (a float32 subnormal).
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::uint32_t> want = bits_of({1.0f, -2.5f, 0.10009765625f, 3.140625f, 3.3895313892515355e38f, 0x1p-133f,
                                             -0.0f, inf, -inf, 0.0f, -1.0101904577379033e-39f});
  want[9] = 0x7FC00000;
  EXPECT_EQ(bits_of(g), want);
}

TEST_F(SafetensorsFile, DtypesRecurLacksAreDTypeErrorsBeforeAnyTensorIsRead) {
  expect_error<DTypeError>([] { load_safetensors(kData / "i32.safetensors"); },
                           {"recur::load_safetensors", "i32.safetensors", "tensor 'count'", "I32", "does not read"});
}

TEST_F(SafetensorsFile, EveryMalformedFileIsAnIOErrorNamingTheProblem) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> cases{
      {"short", {"truncated", "5 bytes", "8 bytes of the header length"}},
      {"header_past_end", {"truncated", "header length is 1000 bytes", "only 8 bytes follow"}},
      {"header_over_limit", {"9223372036854775808", "over the format's limit of 100000000"}},
      {"not_object", {"malformed header", "not a JSON object", "'[1, 2]"}},
      {"bad_json", {"malformed header", "not valid JSON"}},
      {"bad_utf8", {"malformed header", "not valid JSON", "UTF-8"}},
      {"duplicate_key", {"malformed header", "the key 'w' appears twice"}},
      {"unknown_key", {"tensor 'w'", "the key 'order'", "exactly \"dtype\", \"shape\" and \"data_offsets\""}},
      {"missing_offsets", {"tensor 'w'", "lacks \"data_offsets\""}},
      {"negative_shape", {"tensor 'w'", "\"shape\" must be an array of non-negative integers", "the negative number -1"}},
      {"float_offset", {"tensor 'w'", "\"data_offsets\" must be an array of two non-negative integers", "8.0"}},
      {"metadata_not_string", {"'__metadata__'", "the value of 'epochs' must be a string", "the number 3"}},
      {"bad_dtype", {"tensor 'w'", "unknown dtype 'F31'", "BF16"}},
      {"wrong_length", {"tensor 'w'", "F32 of shape [2, 3] takes 24 bytes", "data_offsets [0, 20] hold 20"}},
      {"backwards", {"tensor 'w'", "data_offsets [8, 0] end before they begin"}},
      {"overflow", {"tensor 'w'", "shape [4611686018427387904, 4611686018427387904]", "more elements than int64"}},
      {"overlap", {"tensors 'a' (data_offsets [0, 16]) and 'b' (data_offsets [8, 24]) overlap"}},
      {"gap", {"a gap: bytes 8 to 12", "between 'a' (data_offsets [0, 8]) and 'b' (data_offsets [12, 20])"}},
      {"trailing", {"the last 4 bytes of the data section belong to no tensor"}},
      {"truncated", {"truncated: tensor 'w' (data_offsets [0, 24])", "runs past the end of the data section (20 bytes)"}},
  };
  for (const auto& [name, problem] : cases) {
    SCOPED_TRACE(name);
    const fs::path p = kData / (name + ".safetensors");
    try {
      load_safetensors(p);
      ADD_FAILURE() << "no exception";
    } catch (const IOError& e) {
      const std::string msg = e.what();
      EXPECT_EQ(msg.rfind("recur::load_safetensors: '" + p.string() + "': ", 0), 0u) << msg;
      for (const auto& part : problem) EXPECT_NE(msg.find(part), std::string::npos) << "'" << part << "' not in: " << msg;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "not an IOError: " << e.what();
    }
  }
  expect_error<IOError>([&] { load_safetensors(file("absent.safetensors")); }, {"absent.safetensors", "no such file"});
  expect_error<IOError>([&] { load_safetensors(dir_); }, {"not a regular file"});
}

TEST_F(SafetensorsFile, EveryTruncationAndEveryFlippedHeaderByteIsCaught) {
  save_safetensors(file("good.safetensors"), {{"a", tensor({1.0f, 2.0f})}, {"n", scalar(7, DType::int64)}},
                   {{"format", "pt"}});
  const std::string good = read_bytes(file("good.safetensors"));
  const fs::path p = file("bad.safetensors");
  for (std::size_t n = 0; n < good.size(); ++n) {
    write_bytes(p, good.substr(0, n));
    expect_error<IOError>([&] { load_safetensors(p); }, {"recur::load_safetensors", p.string()});
  }
  // A flipped byte in the length or the JSON breaks a rule: no flip of ASCII gives ASCII,
  // and every byte of the header counts (the padding spaces too: '\xdf' is not JSON).
  const std::size_t data_start = 8 + (static_cast<unsigned char>(good[0]) | static_cast<unsigned char>(good[1]) << 8);
  for (std::size_t i = 0; i < good.size(); ++i) {
    std::string bad = good;
    bad[i] = static_cast<char>(~bad[i]);
    write_bytes(p, bad);
    if (i < data_start) {
      expect_error<IOError>([&] { load_safetensors(p); }, {p.string()});
    } else {
      EXPECT_EQ(load_safetensors(p).tensors.size(), 2u);  // the values changed, not the layout
    }
  }
}

TEST_F(SafetensorsFile, BadTensorsNamesAndMetadataAreValueErrorsBeforeAnyFileIsTouched) {
  save_safetensors(file("keep.safetensors"), {{"w", ones({2})}});
  const std::string old_bytes = read_bytes(file("keep.safetensors"));
  const auto refused = [&](const NamedTensors& tensors, const SafetensorsMetadata& metadata,
                           std::initializer_list<std::string> mentions) {
    expect_error<ValueError>([&] { save_safetensors(file("keep.safetensors"), tensors, metadata); }, mentions);
  };
  refused({{"__metadata__", ones({1})}}, {}, {"recur::save_safetensors", "'__metadata__'", "metadata"});
  refused({{"v", ones({1})}, {"v", ones({2})}}, {}, {"the name 'v' appears twice"});
  refused({{"v", Tensor()}}, {}, {"tensor 'v' is undefined"});
  refused({{"bad\xff", ones({1})}}, {}, {"the name of tensor 0 'bad\\xff' is not valid UTF-8"});
  refused({{"w", ones({1})}}, {{"k\xc3", "v"}}, {"the metadata key 'k\\xc3' is not valid UTF-8"});
  refused({{"w", ones({1})}}, {{"k", "\x80"}}, {"the value of metadata key 'k'", "not valid UTF-8"});
  EXPECT_EQ(read_bytes(file("keep.safetensors")), old_bytes);
  EXPECT_EQ(testing::listing(dir_), (std::vector<std::string>{"keep.safetensors"}));
}

TEST_F(SafetensorsFile, AFailedSaveKeepsTheOldFileAndLeavesNoTemporary) {
  const NamedTensors old_tensors{{"a", ones({4})}};
  save_safetensors(file("keep.safetensors"), old_tensors);
  const std::string old_bytes = read_bytes(file("keep.safetensors"));
  {
    const testing::FileSizeLimit limit(4096);  // the write fails part way
    expect_error<IOError>([&] { save_safetensors(file("keep.safetensors"), {{"a", zeros({100000})}}); },
                          {"recur::save_safetensors", file("keep.safetensors").string(), "File too large"});
  }
  EXPECT_EQ(read_bytes(file("keep.safetensors")), old_bytes);
  EXPECT_EQ(testing::listing(dir_), (std::vector<std::string>{"keep.safetensors"}));
  expect_same(load_safetensors(file("keep.safetensors")).tensors, old_tensors);
}

// Modules and named variables through safetensors files: the npz loads' options and errors.

// Each variable's value (a copy) and version, to compare with after a load.
struct Snapshot {
  std::vector<Tensor> values;
  std::vector<std::uint64_t> versions;
};
Snapshot snapshot(const NamedShared& variables) {
  Snapshot s;
  for (const auto& [name, v] : variables) {
    s.values.push_back(v.value().clone());
    s.versions.push_back(v.version());
  }
  return s;
}
void expect_unchanged(const NamedShared& variables, const Snapshot& s) {
  for (std::size_t i = 0; i < variables.size(); ++i) {
    EXPECT_TRUE(same_bytes(variables[i].second.value(), s.values[i])) << variables[i].first << " changed";
    EXPECT_EQ(variables[i].second.version(), s.versions[i]) << variables[i].first << " was assigned";
  }
}

// An LSTM and a linear head under "lstm." and "head.".
class Model : public Module {
 public:
  explicit Model(Generator& gen) : lstm_({.input_size = 3, .hidden_size = 2, .num_layers = 2}, gen), head_(2, 4, gen) {
    register_module("lstm", lstm_);
    register_module("head", head_);
  }

 private:
  nn::LSTM lstm_;
  nn::Linear head_;
};

class SafetensorsModule : public testing::TempDirTest {
 protected:
  // Expects `bad` to throw E naming `mentions` and leave `variables` exactly as they were.
  template <class E>
  void expect_refused(const NamedShared& variables, const std::function<void()>& bad,
                      std::initializer_list<std::string> mentions) {
    const Snapshot before = snapshot(variables);
    expect_error<E>(bad, mentions);
    expect_unchanged(variables, before);
  }
};

TEST_F(SafetensorsModule, RoundTripsBitForBitUnderTheParametersNames) {
  Generator g1(1), g2(2);
  const Model source(g1), target(g2);
  const NamedShared& from = source.named_parameters();
  const NamedShared& to = target.named_parameters();
  EXPECT_FALSE(same_bytes(from[0].second.value(), to[0].second.value()));
  const Snapshot before = snapshot(to);
  save_safetensors(source, file("model.safetensors"), {{"format", "pt"}});
  const LoadReport report = load_safetensors(target, file("model.safetensors"));
  EXPECT_TRUE(report.missing.empty() && report.unexpected.empty());
  for (std::size_t i = 0; i < from.size(); ++i) {
    EXPECT_TRUE(same_bytes(to[i].second.value(), from[i].second.value())) << from[i].first;
    EXPECT_EQ(to[i].second.version(), before.versions[i] + 1) << from[i].first;
  }
  // The file: one tensor per parameter, under its name, in the module's order.
  const Safetensors file_contents = load_safetensors(file("model.safetensors"));
  EXPECT_EQ(file_contents.metadata, (SafetensorsMetadata{{"format", "pt"}}));
  ASSERT_EQ(file_contents.tensors.size(), from.size());
  for (std::size_t i = 0; i < from.size(); ++i) {
    EXPECT_EQ(file_contents.tensors[i].first, from[i].first);
    EXPECT_TRUE(same_bytes(file_contents.tensors[i].second, from[i].second.value())) << from[i].first;
  }
  EXPECT_EQ(from[0].first, "lstm.weight_ih_l0");
}

TEST_F(SafetensorsModule, MissingAndUnexpectedTensorsAreNamedAndNonStrictSkipsThem) {
  Generator gen(3);
  const Model model(gen);
  const NamedShared& params = model.named_parameters();
  NamedTensors tensors;
  for (const auto& [name, p] : params) tensors.emplace_back(name, p.value());
  tensors.erase(tensors.begin());                        // lstm.weight_ih_l0 missing
  tensors.emplace_back("head.scale", ones({4}));          // not a parameter
  save_safetensors(file("part.safetensors"), tensors);
  Generator other(4);
  const Model target(other);
  const NamedShared& to = target.named_parameters();
  expect_refused<ValueError>(to, [&] { load_safetensors(target, file("part.safetensors")); },
                             {"recur::load_safetensors", file("part.safetensors").string(),
                              "parameters the file lacks 'lstm.weight_ih_l0'; members no parameter has 'head.scale'",
                              "strict"});
  const Snapshot before = snapshot(to);
  const LoadReport r = load_safetensors(target, file("part.safetensors"), {.strict = false});
  EXPECT_EQ(r.missing, (std::vector<std::string>{"lstm.weight_ih_l0"}));
  EXPECT_EQ(r.unexpected, (std::vector<std::string>{"head.scale"}));
  EXPECT_TRUE(same_bytes(to[0].second.value(), before.values[0]));
  EXPECT_EQ(to[0].second.version(), before.versions[0]);
  for (std::size_t i = 1; i < to.size(); ++i) EXPECT_TRUE(same_bytes(to[i].second.value(), params[i].second.value()));

  // A tensor of a dtype recur does not read is skipped unread when no parameter wants it.
  const Shared w(zeros({2}), "w");
  const NamedShared only_w{{"w", w}};
  const fs::path i32 = kData / "i32.safetensors";
  expect_refused<ValueError>(only_w, [&] { load_safetensors(only_w, i32); }, {"members no parameter has 'count'"});
  EXPECT_EQ(load_safetensors(only_w, i32, {.strict = false}).unexpected, (std::vector<std::string>{"count"}));
  EXPECT_EQ(to_vector<float>(w.value()), (std::vector<float>{1.0f, 2.0f}));
  const NamedShared with_count{{"w", w}, {"count", Shared(zeros({3}, DType::int64), "count")}};
  expect_refused<DTypeError>(with_count, [&] { load_safetensors(with_count, i32); }, {"tensor 'count'", "I32"});
}

TEST_F(SafetensorsModule, MisShapedOrMistypedTensorsAreNamedAndChangeNothing) {
  const Shared a(ones({2}), "a"), b(ones({3}), "b");
  const NamedShared variables{{"a", a}, {"b", b}};
  save_safetensors(file("wide.safetensors"), {{"a", zeros({2})}, {"b", zeros({5})}});
  expect_refused<ShapeError>(variables, [&] { load_safetensors(variables, file("wide.safetensors")); },
                             {"recur::load_safetensors", "member 'b'", "shape [5] in the file",
                              "the parameter has shape [3]"});
  save_safetensors(file("f64.safetensors"), {{"a", zeros({2}, DType::float64)}, {"b", full({3}, 0.5, DType::float64)}});
  expect_refused<DTypeError>(variables, [&] { load_safetensors(variables, file("f64.safetensors")); },
                             {"member 'a'", "float64 in the file", "the parameter is float32", "convert_dtypes"});
  load_safetensors(variables, file("f64.safetensors"), {.convert_dtypes = true});
  EXPECT_EQ(to_vector<float>(b.value()), (std::vector<float>{0.5f, 0.5f, 0.5f}));
  // A damaged file is load_safetensors's IOError, and changes nothing either.
  expect_refused<IOError>(variables, [&] { load_safetensors(variables, kData / "gap.safetensors"); },
                          {"recur::load_safetensors", "gap.safetensors", "a gap"});
}

TEST_F(SafetensorsModule, HalfTensorsLoadOnlyWithConvertDtypes) {
  const fs::path f16 = kData / "f16.safetensors";
  const Shared m(zeros({2, 2}), "m"), m64(zeros({2, 2}, DType::float64), "m"), counts(zeros({2, 2}, DType::int64), "m");
  const NamedShared into_f32{{"m", m}}, into_f64{{"m", m64}}, into_i64{{"m", counts}};
  expect_refused<DTypeError>(into_f32, [&] { load_safetensors(into_f32, f16, {.strict = false}); },
                             {"recur::load_safetensors", "member 'm' is F16 in the file", "the parameter is float32",
                              "LoadOptions::convert_dtypes"});
  load_safetensors(into_f32, f16, {.strict = false, .convert_dtypes = true});
  EXPECT_EQ(to_vector<float>(m.value()), (std::vector<float>{1, 2, 3, 4}));
  load_safetensors(into_f64, f16, {.strict = false, .convert_dtypes = true});
  EXPECT_EQ(to_vector<double>(m64.value()), (std::vector<double>{1, 2, 3, 4}));
  expect_refused<DTypeError>(into_i64, [&] { load_safetensors(into_i64, f16, {.strict = false, .convert_dtypes = true}); },
                             {"member 'm' is F16 in the file", "the parameter is int64", "never converted"});
}

TEST_F(SafetensorsModule, BadVariableListsAreRefusedBeforeTheFile) {
  const Shared w(ones({2}), "w");
  const NamedShared null_handle{{"w", w}, {"v", Shared()}};
  const NamedShared repeated{{"w", w}, {"w", Shared(zeros({2}))}};
  expect_error<ValueError>([&] { save_safetensors(null_handle, file("x.safetensors")); },
                           {"recur::save_safetensors", "'v'", "null Shared"});
  expect_error<ValueError>([&] { save_safetensors(repeated, file("x.safetensors")); },
                           {"recur::save_safetensors", "'w'", "twice"});
  expect_error<ValueError>([&] { load_safetensors(repeated, file("absent.safetensors")); },
                           {"recur::load_safetensors", "'w'", "twice"});
  EXPECT_TRUE(testing::listing(dir_).empty());
}

}  // namespace
}  // namespace recur
