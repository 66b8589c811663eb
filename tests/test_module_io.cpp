// Modules saved and loaded by parameter name (autodiff/module_io.hpp): bit-identical round
// trips for every layer and a composite model; the archive's members are numpy's names; a
// file numpy wrote loads and the file recur writes is the one numpy was checked to read
// (tests/fixtures/make_module_fixtures.py); dtype conversion on request; and every refused
// load leaves every parameter's value and version as they were.
#include <gtest/gtest.h>

#include <functional>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"
#include "values.hpp"

namespace recur {
namespace {

using testing::expect_error;
using testing::listing;
using testing::read_bytes;
using testing::same_bytes;
using testing::write_bytes;

namespace fs = std::filesystem;

const fs::path kData = fs::path(RECUR_TEST_DATA) / "module";

// Embedding -> LSTM -> Linear, registered as "embed.", "lstm." and "head.": seven
// parameters under three prefixes.
class Tagger : public Module {
 public:
  Tagger(Generator& gen, DType dtype = DType::float32)
      : embed_(5, 3, gen, dtype), lstm_({.input_size = 3, .hidden_size = 2, .dtype = dtype}, gen),
        head_(2, 4, gen, true, dtype) {
    register_module("embed", embed_);
    register_module("lstm", lstm_);
    register_module("head", head_);
  }

 private:
  nn::Embedding embed_;
  nn::LSTM lstm_;
  nn::Linear head_;
};

const std::vector<std::string> kTaggerNames{"embed.weight",      "lstm.weight_ih_l0", "lstm.weight_hh_l0",
                                            "lstm.bias_ih_l0",   "lstm.bias_hh_l0",   "head.weight",
                                            "head.bias"};

// The values make_module_fixtures.py gives the k-th parameter: k + i/16 at flat index i
// (exact in float32 and float64).
Tensor fixture_value(std::size_t k, const Shape& shape, DType dtype) {
  std::vector<double> v(static_cast<std::size_t>(numel(shape)));
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(k) + static_cast<double>(i) / 16;
  return from_vector<double>(v, shape).to(dtype);
}
void give_fixture_values(const Module& m) {
  std::size_t k = 0;
  for (auto [name, p] : m.named_parameters()) p.assign(fixture_value(k++, p.shape(), p.dtype()));
}

// Every parameter's value (a copy) and version, to compare with after a load.
struct Snapshot {
  std::vector<Tensor> values;
  std::vector<std::uint64_t> versions;
};
Snapshot snapshot(const Module& m) {
  Snapshot s;
  for (const auto& [name, p] : m.named_parameters()) {
    s.values.push_back(p.value().clone());
    s.versions.push_back(p.version());
  }
  return s;
}
void expect_unchanged(const Module& m, const Snapshot& s) {
  std::size_t i = 0;
  for (const auto& [name, p] : m.named_parameters()) {
    EXPECT_TRUE(same_bytes(p.value(), s.values[i])) << name << " changed";
    EXPECT_EQ(p.version(), s.versions[i]) << name << " was assigned";
    ++i;
  }
}

// The member names in the ZIP central directory, read here from the bytes (APPNOTE.TXT
// 4.3.12: signature PK\1\2, name length at offset 28, name at 46): what numpy's zipfile sees.
std::vector<std::string> central_directory_names(const std::string& zip) {
  std::vector<std::string> names;
  for (std::size_t at = zip.find("PK\x01\x02"); at != std::string::npos; at = zip.find("PK\x01\x02", at + 4)) {
    const auto byte = [&](std::size_t i) { return static_cast<std::size_t>(static_cast<unsigned char>(zip[at + i])); };
    names.push_back(zip.substr(at + 46, byte(28) | byte(29) << 8));
  }
  return names;
}

using ModuleIo = testing::TempDirTest;

// Saves a module made from seed 1, loads the file into one made from seed 2 (other values),
// and expects every parameter bit-identical, each assigned once, under its own name.
// unique_ptr<Module>: deleting a layer through its base is defined (virtual ~Module; ASan checks it).
void expect_round_trip(const fs::path& file, const std::function<std::unique_ptr<Module>(Generator&)>& make) {
  Generator g1(1), g2(2);
  const auto source = make(g1), target = make(g2);
  const NamedShared& from = source->named_parameters();
  const NamedShared& to = target->named_parameters();
  ASSERT_EQ(from.size(), to.size());
  ASSERT_FALSE(from.empty());
  EXPECT_FALSE(same_bytes(from[0].second.value(), to[0].second.value())) << "the seeds drew the same values";
  const Snapshot before = snapshot(*target);

  save(*source, file);
  const LoadReport report = load(*target, file);
  EXPECT_TRUE(report.missing.empty());
  EXPECT_TRUE(report.unexpected.empty());
  for (std::size_t i = 0; i < from.size(); ++i) {
    EXPECT_EQ(to[i].first, from[i].first);
    EXPECT_TRUE(same_bytes(to[i].second.value(), from[i].second.value())) << from[i].first;
    EXPECT_EQ(to[i].second.version(), before.versions[i] + 1) << from[i].first;
  }
  // One member per parameter, "<name>.npy", in the module's order.
  std::vector<std::string> want;
  for (const auto& [name, p] : from) want.push_back(name + ".npy");
  EXPECT_EQ(central_directory_names(read_bytes(file)), want);
}

template <class M, class... Args>
std::function<std::unique_ptr<Module>(Generator&)> maker(Args... args) {
  return [=](Generator& g) -> std::unique_ptr<Module> { return std::make_unique<M>(args..., g); };
}

TEST_F(ModuleIo, EveryLayerRoundTripsBitForBit) {
  const nn::RecurrentOptions rnn{.input_size = 3, .hidden_size = 4, .num_layers = 2, .bidirectional = true,
                                 .nonlinearity = nn::Nonlinearity::relu};
  const nn::RecurrentOptions lstm{.input_size = 2, .hidden_size = 3, .num_layers = 2, .dtype = DType::float64};
  const nn::RecurrentOptions gru{.input_size = 5, .hidden_size = 2, .bias = false, .batch_first = true};
  expect_round_trip(file("rnn.npz"), maker<nn::RNN>(rnn));
  expect_round_trip(file("lstm.npz"), maker<nn::LSTM>(lstm));
  expect_round_trip(file("gru.npz"), maker<nn::GRU>(gru));
  expect_round_trip(file("rnn_cell.npz"), maker<nn::RNNCell>(nn::CellOptions{.input_size = 3, .hidden_size = 2}));
  expect_round_trip(file("lstm_cell.npz"),
                    maker<nn::LSTMCell>(nn::CellOptions{.input_size = 3, .hidden_size = 2, .dtype = DType::float64}));
  expect_round_trip(file("gru_cell.npz"),
                    maker<nn::GRUCell>(nn::CellOptions{.input_size = 4, .hidden_size = 3, .bias = false}));
  expect_round_trip(file("linear.npz"), [](Generator& g) -> std::unique_ptr<Module> { return std::make_unique<nn::Linear>(4, 3, g); });
  expect_round_trip(file("embedding.npz"), [](Generator& g) -> std::unique_ptr<Module> { return std::make_unique<nn::Embedding>(6, 2, g); });
  expect_round_trip(file("tagger.npz"), [](Generator& g) -> std::unique_ptr<Module> { return std::make_unique<Tagger>(g); });
}

TEST_F(ModuleIo, TheFileHoldsEachParameterUnderItsName) {
  Generator gen(0);
  const Tagger model(gen);
  save(model, file("tagger.npz"));
  std::vector<std::string> members;
  for (const auto& name : kTaggerNames) members.push_back(name + ".npy");
  EXPECT_EQ(central_directory_names(read_bytes(file("tagger.npz"))), members);
  const TensorMap arrays = load_npz_map(file("tagger.npz"));
  ASSERT_EQ(arrays.size(), kTaggerNames.size());
  for (const auto& [name, p] : model.named_parameters()) EXPECT_TRUE(same_bytes(arrays.at(name), p.value())) << name;
}

TEST_F(ModuleIo, WritesTheFileNumpyWasCheckedToRead) {
  // make_module_fixtures.py --check: numpy.load reads recur_tagger_f32.npz, names and values.
  Generator gen(0);
  const Tagger model(gen);
  give_fixture_values(model);
  save(model, file("tagger.npz"));
  EXPECT_EQ(read_bytes(file("tagger.npz")), read_bytes(kData / "recur_tagger_f32.npz"));
}

TEST_F(ModuleIo, LoadsWhatNumpyWrote) {
  // numpy.savez(**{name: float64 array}) for the Tagger's names (make_module_fixtures.py).
  const fs::path numpy_file = kData / "numpy_tagger_f64.npz";
  Generator gen(0);
  const Tagger f64(gen, DType::float64), f32(gen, DType::float32);
  load(f64, numpy_file);
  std::size_t k = 0;
  for (const auto& [name, p] : f64.named_parameters())
    EXPECT_TRUE(same_bytes(p.value(), fixture_value(k++, p.shape(), DType::float64))) << name;

  // Into float32 only when asked to convert.
  const Snapshot before = snapshot(f32);
  expect_error<DTypeError>([&] { load(f32, numpy_file); },
                           {"recur::load", numpy_file.string(), "member 'embed.weight'", "float64 in the file",
                            "the parameter is float32", "convert_dtypes"});
  expect_unchanged(f32, before);
  load(f32, numpy_file, {.convert_dtypes = true});
  k = 0;
  for (const auto& [name, p] : f32.named_parameters())
    EXPECT_TRUE(same_bytes(p.value(), fixture_value(k++, p.shape(), DType::float32))) << name;
}

TEST_F(ModuleIo, ConvertsDtypesOnRequest) {
  Generator gen(3);
  const Tagger f64(gen, DType::float64), f32(gen, DType::float32);
  // float64 -> float32 rounds each value as Tensor::to does; float32 -> float64 is exact.
  save(f64, file("f64.npz"));
  load(f32, file("f64.npz"), {.convert_dtypes = true});
  for (std::size_t i = 0; i < kTaggerNames.size(); ++i)
    EXPECT_TRUE(same_bytes(f32.named_parameters()[i].second.value(),
                           f64.named_parameters()[i].second.value().to(DType::float32)))
        << kTaggerNames[i];
  save(f32, file("f32.npz"));
  load(f64, file("f32.npz"), {.convert_dtypes = true});
  for (std::size_t i = 0; i < kTaggerNames.size(); ++i)
    EXPECT_EQ(to_vector<double>(f64.named_parameters()[i].second.value()),
              to_vector<double>(f32.named_parameters()[i].second.value()))
        << kTaggerNames[i];

  // int64 members convert into floating variables; floating ones never into int64 ones.
  Shared counts(from_vector<std::int64_t>({1, 2}, {2})), scale(tensor({0.5f, 0.25f}));
  save_npz(file("counts.npz"), {{"counts", tensor({1.5, 2.5}, DType::float64)}, {"scale", arange(2)}});
  expect_error<DTypeError>([&] { load(NamedShared{{"counts", counts}, {"scale", scale}}, file("counts.npz"),
                                      {.convert_dtypes = true}); },
                           {"member 'counts'", "float64", "int64", "never converted"});
  EXPECT_EQ(to_vector<std::int64_t>(counts.value()), (std::vector<std::int64_t>{1, 2}));
  EXPECT_EQ(to_vector<float>(scale.value()), (std::vector<float>{0.5f, 0.25f}));
  load(NamedShared{{"scale", scale}}, file("counts.npz"), {.strict = false, .convert_dtypes = true});
  EXPECT_EQ(to_vector<float>(scale.value()), (std::vector<float>{0.0f, 1.0f}));
}

// A Tagger of known values, and files that differ from it in one way each.
class ModuleIoErrors : public ModuleIo {
 protected:
  void SetUp() override {
    ModuleIo::SetUp();
    Generator g1(1);
    source_ = std::make_unique<Tagger>(g1);
    save(*source_, file("good.npz"));
  }
  // The source's parameters as arrays, edited by `edit`, written to `name`.
  fs::path edited(const std::string& name, const std::function<void(NamedTensors&)>& edit) const {
    NamedTensors arrays;
    for (const auto& [n, p] : source_->named_parameters()) arrays.emplace_back(n, p.value());
    edit(arrays);
    save_npz(file(name), arrays);
    return file(name);
  }
  // Expects `bad` to throw E with `mentions` and leave the target exactly as it was.
  template <class E>
  void expect_refused(const std::function<void()>& bad, std::initializer_list<std::string> mentions) {
    const Snapshot before = snapshot(target_);
    expect_error<E>(bad, mentions);
    expect_unchanged(target_, before);
  }

  Generator g2_{2};
  std::unique_ptr<Tagger> source_;
  const Tagger target_{g2_};
};

TEST_F(ModuleIoErrors, MissingAndUnexpectedMembersAreNamed) {
  // The last parameter missing: every other one would have loaded.
  const fs::path missing = edited("missing.npz", [](NamedTensors& a) { a.pop_back(); });
  expect_refused<ValueError>([&] { load(target_, missing); },
                             {"recur::load", missing.string(), "parameters the file lacks 'head.bias'", "strict"});
  const fs::path extra = edited("extra.npz", [](NamedTensors& a) {
    a.emplace_back("head.scale", ones({4}));
    a.emplace_back("dropout.p", ones({}));
  });
  expect_refused<ValueError>([&] { load(target_, extra); },
                             {"members no parameter has 'dropout.p', 'head.scale'"});
  const fs::path both = edited("both.npz", [](NamedTensors& a) {
    a.erase(a.begin());
    a.emplace_back("embedding.weight", a.front().second);
  });
  expect_refused<ValueError>([&] { load(target_, both); },
                             {"parameters the file lacks 'embed.weight'; members no parameter has 'embedding.weight'"});
}

TEST_F(ModuleIoErrors, NonStrictLoadsWhatMatchesAndSaysWhatNot) {
  const fs::path both = edited("both.npz", [](NamedTensors& a) {
    a.erase(a.begin());
    a.emplace_back("embedding.weight", ones({5, 3}));
  });
  const Snapshot before = snapshot(target_);
  const LoadReport r = load(target_, both, {.strict = false});
  EXPECT_EQ(r.missing, (std::vector<std::string>{"embed.weight"}));
  EXPECT_EQ(r.unexpected, (std::vector<std::string>{"embedding.weight"}));
  const NamedShared& got = target_.named_parameters();
  EXPECT_TRUE(same_bytes(got[0].second.value(), before.values[0])) << "a missing parameter changed";
  EXPECT_EQ(got[0].second.version(), before.versions[0]);
  for (std::size_t i = 1; i < got.size(); ++i)
    EXPECT_TRUE(same_bytes(got[i].second.value(), source_->named_parameters()[i].second.value())) << got[i].first;
}

TEST_F(ModuleIoErrors, MisShapedOrMistypedMembersAreNamed) {
  const fs::path wide = edited("wide.npz", [](NamedTensors& a) { a.back().second = ones({5}); });
  expect_refused<ShapeError>([&] { load(target_, wide); },
                             {"recur::load", wide.string(), "member 'head.bias'", "shape [5] in the file",
                              "the parameter has shape [4]"});
  // Checked all the same when the names need not match, and when converting.
  expect_refused<ShapeError>([&] { load(target_, wide, {.strict = false, .convert_dtypes = true}); },
                             {"member 'head.bias'", "[5]", "[4]"});
  const fs::path f64 = edited("f64.npz", [](NamedTensors& a) { a.back().second = a.back().second.to(DType::float64); });
  expect_refused<DTypeError>([&] { load(target_, f64); },
                             {"recur::load", f64.string(), "member 'head.bias'", "float64", "float32"});
  expect_refused<DTypeError>([&] { load(target_, f64, {.strict = false}); }, {"member 'head.bias'"});
}

TEST_F(ModuleIoErrors, DamagedOrAbsentFilesAreIOErrors) {
  const std::string bytes = read_bytes(file("good.npz"));
  write_bytes(file("truncated.npz"), bytes.substr(0, bytes.size() / 2));
  expect_refused<IOError>([&] { load(target_, file("truncated.npz")); }, {"recur::load_npz", "truncated.npz"});
  std::string flipped = bytes;
  flipped[200] = static_cast<char>(flipped[200] ^ 0x20);  // inside the first member's data
  write_bytes(file("flipped.npz"), flipped);
  expect_refused<IOError>([&] { load(target_, file("flipped.npz")); }, {"flipped.npz"});
  expect_refused<IOError>([&] { load(target_, file("none.npz")); }, {"none.npz", "no such file"});
  // The good file still loads.
  load(target_, file("good.npz"));
  EXPECT_TRUE(same_bytes(target_.named_parameters()[0].second.value(), source_->named_parameters()[0].second.value()));
}

TEST_F(ModuleIoErrors, BadVariableListsAreRefusedBeforeTheFile) {
  const Shared w(ones({2}), "w");
  const NamedShared null_handle{{"w", w}, {"v", Shared()}};
  const NamedShared repeated{{"w", w}, {"w", Shared(zeros({2}))}};
  const NamedShared bad_name{{"../w", w}};
  expect_error<ValueError>([&] { save(null_handle, file("x.npz")); }, {"recur::save", "'v'", "null Shared"});
  expect_error<ValueError>([&] { save(repeated, file("x.npz")); }, {"recur::save", "'w'", "twice"});
  expect_error<ValueError>([&] { save(bad_name, file("x.npz")); }, {"'../w'", "'..'"});
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"good.npz"})) << "a refused save wrote a file";
  const auto version = w.version();
  expect_error<ValueError>([&] { load(null_handle, file("good.npz")); }, {"recur::load", "'v'", "null Shared"});
  expect_error<ValueError>([&] { load(repeated, file("good.npz")); }, {"recur::load", "'w'", "twice"});
  EXPECT_EQ(w.version(), version);
  EXPECT_EQ(to_vector<float>(w.value()), (std::vector<float>{1.0f, 1.0f}));
}

}  // namespace
}  // namespace recur
