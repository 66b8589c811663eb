// Training checkpoints: a round trip restores values, generators and the step; the file is an
// .npz with the documented members; any mismatch or damage throws before anything changes;
// a failed save keeps the previous checkpoint.
#include <gtest/gtest.h>

#include <cstring>

#include <recur/recur.hpp>

#include "expect_error.hpp"
#include "file_helpers.hpp"

namespace recur {
namespace {

using testing::expect_error;
using testing::FileSizeLimit;
using testing::listing;
using testing::read_bytes;
using testing::write_bytes;

namespace fs = std::filesystem;

bool same_bytes(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() &&
         (a.numel() == 0 || std::memcmp(a.raw_data(), b.raw_data(), a.nbytes()) == 0);
}

// A small training state: two parameters, optimizer moments and a counter, a carried RNN
// state, two generators.
class Checkpoint : public testing::TempDirTest {
 protected:
  void SetUp() override {
    TempDirTest::SetUp();
    state_.parameters = {{"lstm.weight_ih_l0", Shared(uniform({4, 3}, -1, 1, init_), "weight_ih_l0")},
                         {"head.bias", Shared(tensor({0.5, -0.25}, DType::float64), "bias")}};
    state_.optimizer_state = {{"lstm.weight_ih_l0.exp_avg", Shared(normal({4, 3}, 0, 1, init_), "m")},
                              {"t", Shared(scalar(12, DType::int64), "t")}};
    state_.extra = {{"carry.h", Shared(tensor({{0.25, -0.75, 1.0}}), "h")}};
    state_.generators = {{"dropout", &dropout_}, {"data", &data_}};
    state_.step = 1234567890123;
  }

  // Copies of every value, to compare with after a load.
  struct Saved {
    std::vector<Tensor> values;
    std::vector<std::uint64_t> versions;
    Generator dropout{0}, data{0};
    std::int64_t step = 0;
  };
  Saved saved() const {
    Saved s{{}, {}, dropout_, data_, state_.step};
    for (const auto* group : {&state_.parameters, &state_.optimizer_state, &state_.extra})
      for (const auto& [name, shared] : *group) {
        s.values.push_back(shared.value().clone());
        s.versions.push_back(shared.version());
      }
    return s;
  }
  void expect_values(const Saved& s) const {
    std::size_t i = 0;
    for (const auto* group : {&state_.parameters, &state_.optimizer_state, &state_.extra})
      for (const auto& [name, shared] : *group) EXPECT_TRUE(same_bytes(shared.value(), s.values[i++])) << name;
    EXPECT_TRUE(dropout_ == s.dropout);
    EXPECT_TRUE(data_ == s.data);
    EXPECT_EQ(state_.step, s.step);
  }
  void expect_unchanged(const Saved& s) const {
    expect_values(s);
    std::size_t i = 0;
    for (const auto* group : {&state_.parameters, &state_.optimizer_state, &state_.extra})
      for (const auto& [name, shared] : *group) EXPECT_EQ(shared.version(), s.versions[i++]) << name;
  }
  // Training goes on: every value, generator and the step move.
  void train_a_step() {
    for (const auto* group : {&state_.parameters, &state_.optimizer_state, &state_.extra})
      for (const auto& [name, shared] : *group) {
        Shared s = shared;
        s.assign(full_like(s.value(), 42.0));
      }
    dropout_.next_u64();
    data_.next_double();
    ++state_.step;
  }

  Generator init_{1}, dropout_{2}, data_{3};
  TrainingState state_;
};

TEST_F(Checkpoint, RoundTripRestoresValuesGeneratorsAndStepAndBumpsVersions) {
  dropout_.next_u64();  // mid-stream, not at the seed
  const Saved before = saved();
  Generator dropout_copy = dropout_;
  save_checkpoint(file("ckpt.npz"), state_);
  const double next_draw = dropout_copy.next_double();

  train_a_step();
  const Saved trained = saved();
  load_checkpoint(file("ckpt.npz"), state_);
  expect_values(before);
  for (std::size_t i = 0; i < trained.versions.size(); ++i) EXPECT_GT(saved().versions[i], trained.versions[i]);
  EXPECT_EQ(dropout_.next_double(), next_draw);  // the stream goes on where it was saved
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"ckpt.npz"}));
}

TEST_F(Checkpoint, TheFileIsAnNpzWithTheDocumentedMembers) {
  save_checkpoint(file("ckpt.npz"), state_);
  const NamedTensors members = load_npz(file("ckpt.npz"));
  std::vector<std::string> names;
  for (const auto& [name, t] : members) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"meta/format", "meta/step", "param/lstm.weight_ih_l0", "param/head.bias",
                                             "optim/lstm.weight_ih_l0.exp_avg", "optim/t", "extra/carry.h",
                                             "rng/dropout", "rng/data"}));
  EXPECT_TRUE(same_bytes(members[0].second, from_vector<std::int64_t>({1}, {})));
  EXPECT_TRUE(same_bytes(members[1].second, from_vector<std::int64_t>({1234567890123}, {})));  // not rounded via double
  EXPECT_TRUE(same_bytes(members[3].second, tensor({0.5, -0.25}, DType::float64)));
  EXPECT_TRUE(same_bytes(members[5].second, scalar(12, DType::int64)));
  EXPECT_TRUE(same_bytes(members[6].second, tensor({{0.25, -0.75, 1.0}})));
  Generator g = dropout_;
  Generator fresh(0);
  fresh.set_state(members[7].second);
  EXPECT_EQ(fresh.next_u64(), g.next_u64());
}

TEST_F(Checkpoint, MismatchesThrowBeforeAnythingChanges) {
  save_checkpoint(file("ckpt.npz"), state_);
  train_a_step();
  const Saved trained = saved();
  const fs::path p = file("ckpt.npz");

  // The state has a parameter the file lacks (last, so that everything before it would
  // already have been assigned by a loader that does not check first).
  state_.optimizer_state.emplace_back("v", Shared(zeros({2}), "v"));
  expect_error<ValueError>([&] { load_checkpoint(p, state_); },
                           {"recur::load_checkpoint", p.string(), "missing members 'optim/v'"});
  state_.optimizer_state.pop_back();
  expect_unchanged(trained);

  // The file has members the state lacks.
  const auto removed = state_.optimizer_state.back();
  state_.optimizer_state.pop_back();
  state_.generators.pop_back();
  expect_error<ValueError>([&] { load_checkpoint(p, state_); }, {"members the state lacks 'optim/t', 'rng/data'"});
  state_.optimizer_state.push_back(removed);
  state_.generators.emplace_back("data", &data_);
  expect_unchanged(trained);

  // Shape and dtype differ.
  const auto bias = state_.parameters.back();
  state_.parameters.back().second = Shared(zeros({3}, DType::float64), "bias");
  expect_error<ShapeError>([&] { load_checkpoint(p, state_); }, {"member 'param/head.bias'", "[2]", "[3]"});
  state_.parameters.back().second = Shared(zeros({2}, DType::float32), "bias");
  expect_error<DTypeError>([&] { load_checkpoint(p, state_); }, {"member 'param/head.bias'", "float64", "float32"});
  state_.parameters.back() = bias;
  expect_unchanged(trained);
}

TEST_F(Checkpoint, EditedFilesThrowBeforeAnythingChanges) {
  save_checkpoint(file("ckpt.npz"), state_);
  const NamedTensors members = load_npz(file("ckpt.npz"));
  train_a_step();
  const Saved trained = saved();
  // The file with member `i` replaced by `t` (or dropped when t is undefined).
  auto edited = [&](std::size_t i, const Tensor& t) {
    NamedTensors m = members;
    if (t.defined()) m[i].second = t;
    else m.erase(m.begin() + static_cast<std::ptrdiff_t>(i));
    save_npz(file("edited.npz"), m);
    return file("edited.npz");
  };
  expect_error<ValueError>([&] { load_checkpoint(edited(0, scalar(2, DType::int64)), state_); },
                           {"format version 2", "reads version 1"});
  expect_error<DTypeError>([&] { load_checkpoint(edited(0, scalar(1.0, DType::float64)), state_); },
                           {"member 'meta/format'", "float64", "int64"});
  expect_error<ValueError>([&] { load_checkpoint(edited(0, Tensor()), state_); }, {"not a recur checkpoint"});
  expect_error<ShapeError>([&] { load_checkpoint(edited(1, from_vector<std::int64_t>({1, 2}, {2})), state_); },
                           {"member 'meta/step'", "[2]", "[]"});
  expect_error<ShapeError>([&] { load_checkpoint(edited(8, arange(3)), state_); },
                           {"member 'rng/data'", "[3]", "generator's state"});
  expect_error<DTypeError>([&] { load_checkpoint(edited(8, members[8].second.to(DType::float64)), state_); },
                           {"member 'rng/data'", "float64", "int64"});
  expect_unchanged(trained);
}

// Before the Generator became Philox4x32-10 its state was mt19937_64's 313 words: such a
// member is refused, naming it and saying why, and nothing changes.
TEST_F(Checkpoint, AGeneratorStateOfTheOldEngineIsRefusedClearly) {
  save_checkpoint(file("ckpt.npz"), state_);
  NamedTensors members = load_npz(file("ckpt.npz"));
  ASSERT_EQ(members[8].first, "rng/data");
  members[8].second = arange(313);
  save_npz(file("old.npz"), members);
  train_a_step();
  const Saved trained = saved();
  expect_error<ShapeError>([&] { load_checkpoint(file("old.npz"), state_); },
                           {"recur::load_checkpoint", "member 'rng/data'", "[313]", "[4]", "mt19937_64", "seed"});
  expect_unchanged(trained);
}

TEST_F(Checkpoint, TruncatedAndCorruptedFilesThrowIOErrorAndChangeNothing) {
  save_checkpoint(file("ckpt.npz"), state_);
  const std::string good = read_bytes(file("ckpt.npz"));
  // Inside parameter data: the middle byte of each parameter's values in the file (found by
  // content, since where they land depends on the sizes of the other members).
  std::vector<std::size_t> inside_parameters;
  for (const auto& [name, shared] : state_.parameters) {
    const Tensor v = shared.value();
    const std::size_t at = good.find(std::string(static_cast<const char*>(v.raw_data()), v.nbytes()));
    ASSERT_NE(at, std::string::npos) << name;
    inside_parameters.push_back(at + v.nbytes() / 2);
  }
  train_a_step();
  const Saved trained = saved();
  const fs::path p = file("bad.npz");
  for (std::size_t n : {std::size_t{0}, std::size_t{21}, good.size() / 3, good.size() / 2, good.size() - 23,
                        good.size() - 1}) {
    write_bytes(p, good.substr(0, n));
    expect_error<IOError>([&] { load_checkpoint(p, state_); }, {"recur::load_npz", p.string()});
  }
  for (std::size_t at : inside_parameters) {
    std::string bad = good;
    bad[at] = static_cast<char>(bad[at] ^ 0x40);
    write_bytes(p, bad);
    expect_error<IOError>([&] { load_checkpoint(p, state_); }, {"CRC-32 mismatch"});
  }
  expect_error<IOError>([&] { load_checkpoint(file("none.npz"), state_); }, {"no such file"});
  expect_unchanged(trained);
}

TEST_F(Checkpoint, AnInterruptedSaveKeepsThePreviousCheckpoint) {
  save_checkpoint(file("ckpt.npz"), state_);
  const std::string previous = read_bytes(file("ckpt.npz"));
  const Saved at_save = saved();
  train_a_step();
  state_.parameters.emplace_back("embedding", Shared(zeros({1000, 64}), "embedding"));  // 256 kB more
  {
    const FileSizeLimit limit(previous.size() + 1000);  // the disk fills up during the write
    expect_error<IOError>([&] { save_checkpoint(file("ckpt.npz"), state_); }, {"recur::save_npz", "ckpt.npz"});
  }
  EXPECT_EQ(read_bytes(file("ckpt.npz")), previous);
  EXPECT_EQ(listing(dir_), (std::vector<std::string>{"ckpt.npz"})) << "a temporary was left behind";
  state_.parameters.pop_back();
  load_checkpoint(file("ckpt.npz"), state_);
  expect_values(at_save);
}

TEST_F(Checkpoint, InvalidStatesAreValueErrors) {
  TrainingState dup = state_;
  dup.parameters.push_back(dup.parameters.front());
  expect_error<ValueError>([&] { save_checkpoint(file("c.npz"), dup); },
                           {"recur::save_checkpoint", "'param/lstm.weight_ih_l0'", "twice"});
  TrainingState null_shared = state_;
  null_shared.optimizer_state.emplace_back("nothing", Shared());
  expect_error<ValueError>([&] { save_checkpoint(file("c.npz"), null_shared); }, {"'optim/nothing'", "null Shared"});
  TrainingState null_generator = state_;
  null_generator.generators.emplace_back("none", nullptr);
  expect_error<ValueError>([&] { save_checkpoint(file("c.npz"), null_generator); }, {"'rng/none'", "null pointer"});
  TrainingState bad_name = state_;
  bad_name.parameters.emplace_back("../escape", Shared(zeros({1}), "x"));
  expect_error<ValueError>([&] { save_checkpoint(file("c.npz"), bad_name); }, {"'param/../escape'", "'..'"});
  EXPECT_TRUE(listing(dir_).empty());

  save_checkpoint(file("c.npz"), state_);
  expect_error<ValueError>([&] { load_checkpoint(file("c.npz"), dup); }, {"recur::load_checkpoint", "twice"});
  expect_error<ValueError>([&] { load_checkpoint(file("c.npz"), null_generator); }, {"null pointer"});
}

}  // namespace
}  // namespace recur
